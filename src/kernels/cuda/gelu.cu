#include "gelu.hpp"

#include <algorithm>

#include "half_vectors.cuh"

namespace vit::cuda {
namespace {

constexpr int kThreads = 256;
// The backward's block: 32 vectors of columns (256 columns, one warp's
// 512-byte row segment) by 8 row lanes, which take a chunk's rows in turn.
constexpr int kColumnVectors = 32;
constexpr int kRowLanes = 8;

constexpr float kSqrtHalf = 0.70710678118654752440f;    // 1 / sqrt(2)
constexpr float kInvSqrt2Pi = 0.39894228040143267794f;  // 1 / sqrt(2 pi)

// The same expressions as LibTorch's CUDA GeluCUDAKernelImpl and
// GeluBackwardCUDAKernelImpl (approximate "none"), in fp32.
__device__ inline float gelu(float x) {
  return 0.5f * x * (1.0f + erff(x * kSqrtHalf));
}

__device__ inline float gelu_slope(float x) {
  const float cdf = 0.5f * (1.0f + erff(x * kSqrtHalf));
  const float pdf = expf(-0.5f * x * x) * kInvSqrt2Pi;
  return cdf + x * pdf;
}

template <typename Pair>
__global__ void __launch_bounds__(kThreads)
    gelu_forward(const uint4* __restrict__ h, uint4* __restrict__ a, int64_t vectors) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x;
  if (i >= vectors) return;
  float v[kVector];
  unpack<Pair>(h[i], v);
#pragma unroll
  for (int k = 0; k < kVector; ++k)
    v[k] = gelu(v[k]);
  a[i] = pack<Pair>(v);
}

// Thread (x, y) of block (bx, by) takes column vector bx * 32 + x in the
// rows first + y, first + y + 8, ... of chunk by, and sums its eight columns
// of the rounded dh in fp32; the row lanes' sums are then added in shared
// memory, in a fixed order, so the result does not depend on timing.
template <typename Pair>
__global__ void __launch_bounds__(kColumnVectors* kRowLanes)
    gelu_backward(const uint4* __restrict__ da, const uint4* __restrict__ h, uint4* __restrict__ dh,
                  float* __restrict__ partials, int64_t rows, int64_t vectors,
                  int64_t rows_per_chunk) {
  const int64_t column = static_cast<int64_t>(blockIdx.x) * kColumnVectors + threadIdx.x;
  const int64_t first = static_cast<int64_t>(blockIdx.y) * rows_per_chunk;
  const int64_t last = min(rows, first + rows_per_chunk);
  float sums[kVector] = {};
  if (column < vectors) {
#pragma unroll 4
    for (int64_t r = first + threadIdx.y; r < last; r += kRowLanes) {
      const int64_t at = r * vectors + column;
      float g[kVector], x[kVector];
      unpack<Pair>(da[at], g);
      unpack<Pair>(h[at], x);
#pragma unroll
      for (int k = 0; k < kVector; ++k)
        g[k] *= gelu_slope(x[k]);
      const uint4 rounded = pack<Pair>(g);
      dh[at] = rounded;
      unpack<Pair>(rounded, g);  // the bias sums what is stored
#pragma unroll
      for (int k = 0; k < kVector; ++k)
        sums[k] += g[k];
    }
  }
  // [lane][k][x]: a warp's 32 threads write 32 consecutive words.
  __shared__ float lanes[kRowLanes][kVector][kColumnVectors];
#pragma unroll
  for (int k = 0; k < kVector; ++k)
    lanes[threadIdx.y][k][threadIdx.x] = sums[k];
  __syncthreads();
  if (threadIdx.y != 0 || column >= vectors) return;
  for (int lane = 1; lane < kRowLanes; ++lane) {
#pragma unroll
    for (int k = 0; k < kVector; ++k)
      sums[k] += lanes[lane][k][threadIdx.x];
  }
  float* out = partials + static_cast<int64_t>(blockIdx.y) * vectors * kVector + column * kVector;
#pragma unroll
  for (int k = 0; k < kVector; ++k)
    out[k] = sums[k];
}

template <typename Pair>
void forward_as(const void* h, void* a, int64_t count, cudaStream_t stream) {
  const int64_t vectors = count / kVector;
  if (vectors == 0) return;
  const auto grid = static_cast<unsigned>((vectors + kThreads - 1) / kThreads);
  gelu_forward<Pair><<<grid, kThreads, 0, stream>>>(static_cast<const uint4*>(h),
                                                    static_cast<uint4*>(a), vectors);
}

int64_t column_blocks(int64_t d) {
  return (d / kVector + kColumnVectors - 1) / kColumnVectors;
}

template <typename Pair>
void backward_as(const void* da, const void* h, void* dh, float* partials, int64_t rows, int64_t d,
                 int64_t chunks, cudaStream_t stream) {
  const int64_t vectors = d / kVector;
  const int64_t rows_per_chunk = (rows + chunks - 1) / chunks;
  const dim3 grid(static_cast<unsigned>(column_blocks(d)), static_cast<unsigned>(chunks));
  const dim3 block(kColumnVectors, kRowLanes);
  gelu_backward<Pair><<<grid, block, 0, stream>>>(
      static_cast<const uint4*>(da), static_cast<const uint4*>(h), static_cast<uint4*>(dh),
      partials, rows, vectors, rows_per_chunk);
}

}  // namespace

bool gelu_fits(int64_t d) {
  return d > 0 && d % kVector == 0;
}

void launch_gelu_forward(HalfType type, const void* h, void* a, int64_t count,
                         CUstream_st* stream) {
  if (type == HalfType::kBFloat16)
    forward_as<__nv_bfloat162>(h, a, count, stream);
  else
    forward_as<__half2>(h, a, count, stream);
}

int64_t gelu_backward_chunks(int64_t rows, int64_t d, int multiprocessors) {
  const int64_t wanted =
      std::max<int64_t>(1, 4 * std::max<int64_t>(multiprocessors, 1) / column_blocks(d));
  const int64_t most = std::max<int64_t>(1, rows / (2 * kRowLanes));
  return std::min(wanted, most);
}

void launch_gelu_backward(HalfType type, const void* da, const void* h, void* dh, float* partials,
                          int64_t rows, int64_t d, int64_t chunks, CUstream_st* stream) {
  if (rows == 0) return;
  if (type == HalfType::kBFloat16)
    backward_as<__nv_bfloat162>(da, h, dh, partials, rows, d, chunks, stream);
  else
    backward_as<__half2>(da, h, dh, partials, rows, d, chunks, stream);
}

}  // namespace vit::cuda
