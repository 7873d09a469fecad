#pragma once
// GELU in its exact form on a GPU, 16-bit, for the MLP's first layer
// (kernels/gpu_linear_gelu calls it):
//   forward:  a = h Phi(h), Phi the standard normal CDF through erf;
//   backward: dh = da gelu'(h), gelu'(h) = Phi(h) + h phi(h), and in the same
//             pass each block's sums of dh over its rows: the layer's bias
//             gradient, for the caller to add over the blocks.
// fp32 inside, each output rounded once, as LibTorch's CUDA gelu and
// gelu_backward compute it; the bias sums add the rounded dh, as a product
// 1^T dh of the stored gradient would. Compiled by nvcc only where LibTorch
// has CUDA (VIT_WITH_CUDA); it needs no LibTorch header.
#include <cstdint>

#include "half_type.hpp"

struct CUstream_st;  // cudaStream_t is a CUstream_st*

namespace vit::cuda {

// Whether the kernels take rows of d values: whole 16-byte vectors.
bool gelu_fits(int64_t d);

// h and a: `count` values (a multiple of 8), 16-byte aligned. Launches on
// `stream` and returns; the caller checks the launch.
void launch_gelu_forward(HalfType type, const void* h, void* a, int64_t count, CUstream_st* stream);

// Blocks of rows the backward's sums are split into, for rows of d values
// on a GPU with `multiprocessors` SMs: about four blocks of 256 threads a
// SM (one wave: its 58 to 60 registers a thread let four run at once), with
// at least two rows for each of a block's row lanes.
int64_t gelu_backward_chunks(int64_t rows, int64_t d, int multiprocessors);

// da, h and dh: (rows, d) row-major, 16-byte aligned, d as gelu_fits.
// partials: (chunks, d) fp32, [c] the sums of dh over chunk c's rows.
void launch_gelu_backward(HalfType type, const void* da, const void* h, void* dh, float* partials,
                          int64_t rows, int64_t d, int64_t chunks, CUstream_st* stream);

}  // namespace vit::cuda
