#pragma once
// LayerNorm's weight and bias gradients on a GPU, from the saved input and
// its rows' statistics:
//   dweight[j] = sum_i dy[i][j] (x[i][j] - mean[i]) rstd[i],
//   dbias[j]   = sum_i dy[i][j],
// in one pass over dy and x (kernels/product_reductions calls it). Compiled
// by nvcc only where LibTorch has CUDA (VIT_WITH_CUDA); it needs no LibTorch
// header, so that nvcc compiles it in seconds.
#include <cstdint>

#include "half_type.hpp"

struct CUstream_st;  // cudaStream_t is a CUstream_st*

namespace vit::cuda {

// Blocks of rows the sums are split into, for rows of d values on a GPU with
// `multiprocessors` SMs: about four blocks of 256 threads per SM.
int64_t layer_norm_parameter_gradient_chunks(int64_t rows, int64_t d, int multiprocessors);

// Writes each chunk's sums to partials, (chunks, 2, d) fp32: [c][0] the
// weight's, [c][1] the bias's, for the caller to add over c. dy and x are
// (rows, d) row-major, 4-byte aligned, d even; mean and rstd are rows fp32.
// Launches on `stream` and returns; the caller checks the launch.
void launch_layer_norm_parameter_gradients(HalfType type, const void* dy, const void* x,
                                           const float* mean, const float* rstd, float* partials,
                                           int64_t rows, int64_t d, int64_t chunks,
                                           CUstream_st* stream);

}  // namespace vit::cuda
