#include "layer_norm_parameter_gradients.hpp"

#include <algorithm>

#include "half_vectors.cuh"

namespace vit::cuda {
namespace {

// A block covers 32 pairs of columns (one warp's 128-byte row segment) and
// a chunk of rows, which its 8 warps take in turn: warp w reads rows
// first + w, first + w + 8, ... Each thread sums its two columns in fp32,
// then the warps' sums are added in shared memory, in a fixed order, so the
// result does not depend on timing.
constexpr int kPairsPerBlock = 32;
constexpr int kRowLanes = 8;

template <typename Pair>
__global__ void __launch_bounds__(kPairsPerBlock* kRowLanes)
    parameter_gradient_sums(const Pair* __restrict__ dy, const Pair* __restrict__ x,
                            const float* __restrict__ mean, const float* __restrict__ rstd,
                            float* __restrict__ partials, int64_t rows, int64_t pairs,
                            int64_t rows_per_chunk) {
  const int64_t pair = static_cast<int64_t>(blockIdx.x) * kPairsPerBlock + threadIdx.x;
  const int64_t first = static_cast<int64_t>(blockIdx.y) * rows_per_chunk;
  const int64_t last = min(rows, first + rows_per_chunk);
  float4 sums = make_float4(0.0f, 0.0f, 0.0f, 0.0f);  // weight's two, bias's two
  if (pair < pairs) {
    for (int64_t r = first + threadIdx.y; r < last; r += kRowLanes) {
      const float2 g = Half<Pair>::widen(dy[r * pairs + pair]);
      const float2 v = Half<Pair>::widen(x[r * pairs + pair]);
      const float mu = mean[r], s = rstd[r];
      sums.x += g.x * ((v.x - mu) * s);
      sums.y += g.y * ((v.y - mu) * s);
      sums.z += g.x;
      sums.w += g.y;
    }
  }
  __shared__ float4 lanes[kRowLanes][kPairsPerBlock];
  lanes[threadIdx.y][threadIdx.x] = sums;
  __syncthreads();
  if (threadIdx.y != 0 || pair >= pairs) return;
  for (int lane = 1; lane < kRowLanes; ++lane) {
    const float4 other = lanes[lane][threadIdx.x];
    sums.x += other.x;
    sums.y += other.y;
    sums.z += other.z;
    sums.w += other.w;
  }
  const int64_t d = 2 * pairs;
  float* weight = partials + static_cast<int64_t>(blockIdx.y) * 2 * d;
  float* bias = weight + d;
  weight[2 * pair] = sums.x;
  weight[2 * pair + 1] = sums.y;
  bias[2 * pair] = sums.z;
  bias[2 * pair + 1] = sums.w;
}

template <typename Pair>
void launch(const void* dy, const void* x, const float* mean, const float* rstd, float* partials,
            int64_t rows, int64_t d, int64_t chunks, cudaStream_t stream) {
  const int64_t pairs = d / 2;
  const int64_t rows_per_chunk = (rows + chunks - 1) / chunks;
  const dim3 grid(static_cast<unsigned>((pairs + kPairsPerBlock - 1) / kPairsPerBlock),
                  static_cast<unsigned>(chunks));
  const dim3 block(kPairsPerBlock, kRowLanes);
  parameter_gradient_sums<Pair><<<grid, block, 0, stream>>>(static_cast<const Pair*>(dy),
                                                            static_cast<const Pair*>(x), mean, rstd,
                                                            partials, rows, pairs, rows_per_chunk);
}

}  // namespace

int64_t layer_norm_parameter_gradient_chunks(int64_t rows, int64_t d, int multiprocessors) {
  const int64_t column_blocks = (d / 2 + kPairsPerBlock - 1) / kPairsPerBlock;
  const int64_t wanted = std::max<int64_t>(1, 4 * std::max(multiprocessors, 1) / column_blocks);
  // At least two rows for each of a block's warps.
  const int64_t most = std::max<int64_t>(1, rows / (2 * kRowLanes));
  return std::min(wanted, most);
}

void launch_layer_norm_parameter_gradients(HalfType type, const void* dy, const void* x,
                                           const float* mean, const float* rstd, float* partials,
                                           int64_t rows, int64_t d, int64_t chunks,
                                           CUstream_st* stream) {
  if (type == HalfType::kBFloat16)
    launch<__nv_bfloat162>(dy, x, mean, rstd, partials, rows, d, chunks, stream);
  else
    launch<__half2>(dy, x, mean, rstd, partials, rows, d, chunks, stream);
}

}  // namespace vit::cuda
