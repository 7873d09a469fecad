#pragma once
// A pre-norm block's seam on a GPU, 16-bit end to end: the residual add and the
// LayerNorm that follows it (kernels/gpu_residual_norm calls it).
//   forward:  z = x + y (rounded as a separate add would), n = (z - mean) rstd
//             weight + bias; mean and rstd fp32, one per row, as LibTorch's;
//   backward: dx = dz + rstd (g - mean(g) - x_hat mean(g x_hat)), x_hat =
//             (z - mean) rstd, g = dn weight (x's and y's gradient); and each
//             block's sums of dn x_hat and dn over its rows.
// Compiled by nvcc only where LibTorch has CUDA (VIT_WITH_CUDA).
#include <cstdint>

#include "half_type.hpp"

struct CUstream_st;  // cudaStream_t is a CUstream_st*

namespace vit::cuda {

// Whether the kernels take rows of d values: d a multiple of 8, at most 1024.
bool residual_layer_norm_fits(int64_t d);

// x, y, z and n are (rows, d) row-major and 16-byte aligned; weight and bias (d) of
// the same type, any alignment. y null: no add (z = x, not written; may be null).
// Launches on `stream` and returns; the caller checks the launch.
void launch_residual_layer_norm_forward(HalfType type, const void* x, const void* y,
                                        const void* weight, const void* bias, void* z, void* n,
                                        float* mean, float* rstd, int64_t rows, int64_t d,
                                        float eps, CUstream_st* stream);

// Blocks of 8 warps the backward runs as, for `rows` rows on `multiprocessors` SMs.
int64_t residual_layer_norm_backward_blocks(int64_t rows, int multiprocessors);

// dn, dz, z and dx as x above; dz null: dx is the norm's gradient alone. partials:
// (blocks, 2, d) fp32, [b][0] the weight's sums and [b][1] the bias's over block
// b's rows, for the caller to add over the blocks.
void launch_residual_layer_norm_backward(HalfType type, const void* dn, const void* dz,
                                         const void* z, const void* weight, const float* mean,
                                         const float* rstd, void* dx, float* partials, int64_t rows,
                                         int64_t d, int64_t blocks, CUstream_st* stream);

}  // namespace vit::cuda
