// One warp per row of d values: d a multiple of 8 makes rows of whole 16-byte
// vectors, and at most 1024 keeps a row in the registers of one warp. mean and rstd
// are kept as LibTorch's CUDA LayerNorm keeps them. The backward runs about four
// blocks a SM, at most one row a warp. No LibTorch header is needed.
#include "residual_layer_norm.hpp"

#include <algorithm>

#include "half_vectors.cuh"

namespace vit::cuda {
namespace {

constexpr int kWarps = 8;  // a block's warps, each on one row at a time
constexpr int kThreads = kWarps * 32;
constexpr int kMaxWidth = 1024;

// A parameter's eight values from `first` on: scalar loads, since a
// parameter may be a view at any offset of the step's flat bf16 copy of the
// weights (train/weight_mirror).
template <typename Pair>
__device__ inline void load_parameter(const typename Half<Pair>::Scalar* __restrict__ p, int first,
                                      float (&v)[kVector]) {
#pragma unroll
  for (int k = 0; k < kVector; ++k)
    v[k] = Half<Pair>::widen(p[first + k]);
}

__device__ inline float warp_sum(float v) {
#pragma unroll
  for (int offset = 16; offset > 0; offset /= 2)
    v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}

// One warp a row; lane l holds the row's 16-byte vectors l, l + 32, ...
// (kPerLane of them) in registers, so each value is read once.
template <typename Pair, int kPerLane>
__global__ void __launch_bounds__(kThreads)
    residual_layer_norm_forward(const uint4* __restrict__ x, const uint4* __restrict__ y,
                                const typename Half<Pair>::Scalar* __restrict__ weight,
                                const typename Half<Pair>::Scalar* __restrict__ bias,
                                uint4* __restrict__ z, uint4* __restrict__ n,
                                float* __restrict__ mean, float* __restrict__ rstd, int64_t rows,
                                int vectors, float eps) {
  const int lane = threadIdx.x % 32;
  const int64_t row = static_cast<int64_t>(blockIdx.x) * kWarps + threadIdx.x / 32;
  if (row >= rows) return;  // the whole warp: the shuffles below see all 32 lanes
  const int64_t first = row * vectors;
  const float d = static_cast<float>(vectors * kVector);
  float v[kPerLane][kVector];
  float sum = 0.0f;
#pragma unroll
  for (int i = 0; i < kPerLane; ++i) {
    const int c = i * 32 + lane;
    if (c >= vectors) continue;
    unpack<Pair>(x[first + c], v[i]);
    if (y != nullptr) {
      float branch[kVector];
      unpack<Pair>(y[first + c], branch);
#pragma unroll
      for (int k = 0; k < kVector; ++k)
        v[i][k] += branch[k];
      const uint4 rounded = pack<Pair>(v[i]);  // z in the 16-bit type, as a separate add
      z[first + c] = rounded;
      unpack<Pair>(rounded, v[i]);  // the norm reads z as stored
    }
#pragma unroll
    for (int k = 0; k < kVector; ++k)
      sum += v[i][k];
  }
  const float mu = warp_sum(sum) / d;
  float squares = 0.0f;
#pragma unroll
  for (int i = 0; i < kPerLane; ++i) {
    if (i * 32 + lane >= vectors) continue;
#pragma unroll
    for (int k = 0; k < kVector; ++k) {
      const float t = v[i][k] - mu;
      squares += t * t;
    }
  }
  const float rs = rsqrtf(warp_sum(squares) / d + eps);  // the biased variance, as LibTorch
#pragma unroll
  for (int i = 0; i < kPerLane; ++i) {
    const int c = i * 32 + lane;
    if (c >= vectors) continue;
    float gamma[kVector], beta[kVector];
    load_parameter<Pair>(weight, c * kVector, gamma);
    load_parameter<Pair>(bias, c * kVector, beta);
#pragma unroll
    for (int k = 0; k < kVector; ++k)
      v[i][k] = (v[i][k] - mu) * rs * gamma[k] + beta[k];
    n[first + c] = pack<Pair>(v[i]);
  }
  if (lane == 0) {
    mean[row] = mu;
    rstd[row] = rs;
  }
}

// Each warp takes rows blockIdx.x * 8 + warp, then every gridDim.x * 8th,
// summing its lanes' columns of dn x_hat and dn in registers; the block's 8
// warps then add theirs in shared memory, in a fixed order, so the sums do
// not depend on timing.
template <typename Pair, int kPerLane>
__global__ void __launch_bounds__(kThreads)
    residual_layer_norm_backward(const uint4* __restrict__ dn, const uint4* __restrict__ dz,
                                 const uint4* __restrict__ z,
                                 const typename Half<Pair>::Scalar* __restrict__ weight,
                                 const float* __restrict__ mean, const float* __restrict__ rstd,
                                 uint4* __restrict__ dx, float* __restrict__ partials, int64_t rows,
                                 int vectors) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int width = vectors * kVector;
  const float d = static_cast<float>(width);
  float weight_sums[kPerLane][kVector] = {}, bias_sums[kPerLane][kVector] = {};
  for (int64_t row = static_cast<int64_t>(blockIdx.x) * kWarps + warp; row < rows;
       row += static_cast<int64_t>(gridDim.x) * kWarps) {
    const int64_t first = row * vectors;
    const float mu = mean[row], rs = rstd[row];
    float x_hat[kPerLane][kVector], g[kPerLane][kVector];
    float g_sum = 0.0f, g_x_hat_sum = 0.0f;
#pragma unroll
    for (int i = 0; i < kPerLane; ++i) {
      const int c = i * 32 + lane;
      if (c >= vectors) continue;
      float dy[kVector], gamma[kVector];
      unpack<Pair>(dn[first + c], dy);
      unpack<Pair>(z[first + c], x_hat[i]);
      load_parameter<Pair>(weight, c * kVector, gamma);
#pragma unroll
      for (int k = 0; k < kVector; ++k) {
        x_hat[i][k] = (x_hat[i][k] - mu) * rs;
        weight_sums[i][k] += dy[k] * x_hat[i][k];
        bias_sums[i][k] += dy[k];
        g[i][k] = dy[k] * gamma[k];
        g_sum += g[i][k];
        g_x_hat_sum += g[i][k] * x_hat[i][k];
      }
    }
    const float g_mean = warp_sum(g_sum) / d, g_x_hat_mean = warp_sum(g_x_hat_sum) / d;
#pragma unroll
    for (int i = 0; i < kPerLane; ++i) {
      const int c = i * 32 + lane;
      if (c >= vectors) continue;
      float out[kVector];
#pragma unroll
      for (int k = 0; k < kVector; ++k)
        out[k] = rs * (g[i][k] - g_mean - x_hat[i][k] * g_x_hat_mean);
      if (dz != nullptr) {
        float stream[kVector];
        unpack<Pair>(dz[first + c], stream);
#pragma unroll
        for (int k = 0; k < kVector; ++k)
          out[k] += stream[k];
      }
      dx[first + c] = pack<Pair>(out);
    }
  }
  __shared__ float block_sums[2][kMaxWidth];
  for (int w = 0; w < kWarps; ++w) {
    if (warp == w) {
#pragma unroll
      for (int i = 0; i < kPerLane; ++i) {
        const int c = i * 32 + lane;
        if (c >= vectors) continue;
#pragma unroll
        for (int k = 0; k < kVector; ++k) {
          const int column = c * kVector + k;
          block_sums[0][column] = (w == 0 ? 0.0f : block_sums[0][column]) + weight_sums[i][k];
          block_sums[1][column] = (w == 0 ? 0.0f : block_sums[1][column]) + bias_sums[i][k];
        }
      }
    }
    __syncthreads();
  }
  float* out = partials + static_cast<int64_t>(blockIdx.x) * 2 * width;
  for (int column = threadIdx.x; column < width; column += kThreads) {
    out[column] = block_sums[0][column];
    out[width + column] = block_sums[1][column];
  }
}

// A row's 16-byte vectors a lane holds: 1 for d up to 256, ..., 4 up to 1024.
int vectors_per_lane(int64_t d) {
  return static_cast<int>((d / kVector + 31) / 32);
}

template <typename Pair>
void forward_as(const void* x, const void* y, const void* weight, const void* bias, void* z,
                void* n, float* mean, float* rstd, int64_t rows, int64_t d, float eps,
                cudaStream_t stream) {
  using Scalar = typename Half<Pair>::Scalar;
  const auto grid = static_cast<unsigned>((rows + kWarps - 1) / kWarps);
  const int vectors = static_cast<int>(d / kVector);
  const auto* in = static_cast<const uint4*>(x);
  const auto* branch = static_cast<const uint4*>(y);
  const auto* gamma = static_cast<const Scalar*>(weight);
  const auto* beta = static_cast<const Scalar*>(bias);
  auto* sum = static_cast<uint4*>(z);
  auto* normalized = static_cast<uint4*>(n);
#define VIT_RESIDUAL_NORM_FORWARD(PER_LANE)                                   \
  residual_layer_norm_forward<Pair, PER_LANE><<<grid, kThreads, 0, stream>>>( \
      in, branch, gamma, beta, sum, normalized, mean, rstd, rows, vectors, eps)
  switch (vectors_per_lane(d)) {
    case 1:
      VIT_RESIDUAL_NORM_FORWARD(1);
      break;
    case 2:
      VIT_RESIDUAL_NORM_FORWARD(2);
      break;
    case 3:
      VIT_RESIDUAL_NORM_FORWARD(3);
      break;
    default:
      VIT_RESIDUAL_NORM_FORWARD(4);
      break;
  }
#undef VIT_RESIDUAL_NORM_FORWARD
}

template <typename Pair>
void backward_as(const void* dn, const void* dz, const void* z, const void* weight,
                 const float* mean, const float* rstd, void* dx, float* partials, int64_t rows,
                 int64_t d, int64_t blocks, cudaStream_t stream) {
  using Scalar = typename Half<Pair>::Scalar;
  const auto grid = static_cast<unsigned>(blocks);
  const int vectors = static_cast<int>(d / kVector);
  const auto* grad_n = static_cast<const uint4*>(dn);
  const auto* grad_z = static_cast<const uint4*>(dz);
  const auto* sum = static_cast<const uint4*>(z);
  const auto* gamma = static_cast<const Scalar*>(weight);
  auto* grad_x = static_cast<uint4*>(dx);
#define VIT_RESIDUAL_NORM_BACKWARD(PER_LANE)                                   \
  residual_layer_norm_backward<Pair, PER_LANE><<<grid, kThreads, 0, stream>>>( \
      grad_n, grad_z, sum, gamma, mean, rstd, grad_x, partials, rows, vectors)
  switch (vectors_per_lane(d)) {
    case 1:
      VIT_RESIDUAL_NORM_BACKWARD(1);
      break;
    case 2:
      VIT_RESIDUAL_NORM_BACKWARD(2);
      break;
    case 3:
      VIT_RESIDUAL_NORM_BACKWARD(3);
      break;
    default:
      VIT_RESIDUAL_NORM_BACKWARD(4);
      break;
  }
#undef VIT_RESIDUAL_NORM_BACKWARD
}

}  // namespace

bool residual_layer_norm_fits(int64_t d) {
  return d > 0 && d % kVector == 0 && d <= kMaxWidth;
}

int64_t residual_layer_norm_backward_blocks(int64_t rows, int multiprocessors) {
  const int64_t wanted = 4 * static_cast<int64_t>(std::max(multiprocessors, 1));
  return std::max<int64_t>(1, std::min(wanted, (rows + kWarps - 1) / kWarps));
}

void launch_residual_layer_norm_forward(HalfType type, const void* x, const void* y,
                                        const void* weight, const void* bias, void* z, void* n,
                                        float* mean, float* rstd, int64_t rows, int64_t d,
                                        float eps, CUstream_st* stream) {
  if (type == HalfType::kBFloat16)
    forward_as<__nv_bfloat162>(x, y, weight, bias, z, n, mean, rstd, rows, d, eps, stream);
  else
    forward_as<__half2>(x, y, weight, bias, z, n, mean, rstd, rows, d, eps, stream);
}

void launch_residual_layer_norm_backward(HalfType type, const void* dn, const void* dz,
                                         const void* z, const void* weight, const float* mean,
                                         const float* rstd, void* dx, float* partials, int64_t rows,
                                         int64_t d, int64_t blocks, CUstream_st* stream) {
  if (type == HalfType::kBFloat16)
    backward_as<__nv_bfloat162>(dn, dz, z, weight, mean, rstd, dx, partials, rows, d, blocks,
                                stream);
  else
    backward_as<__half2>(dn, dz, z, weight, mean, rstd, dx, partials, rows, d, blocks, stream);
}

}  // namespace vit::cuda
