#pragma once
// GELU in its exact form, x Phi(x) with Phi the standard normal CDF, as
// torch::gelu and timm's nn.GELU compute it.
//
// On CPUs with AVX2 or AVX-512, contiguous fp32 and bf16 tensors go through a
// kernel of our own, forward and backward (kernels/simd/gelu.inc, compiled for
// both). Measured in AVX-512 over the CPU benchmark job's MLP activations
// (8,320 x 768, 2 threads, AMD EPYC, LibTorch 1.13), forward plus backward
// through autograd: bf16 5.0 ms against torch::gelu's 5.3-8.7, fp32 4.8 ms
// against 18-22 (LibTorch's fp32 backward is the slow part). Results agree with the exact formula to float rounding;
// bf16 outputs are the exact value rounded, or one bf16 step from it.
// Everything else (other devices and dtypes, strided views, CPUs without
// AVX2) runs torch::gelu.
#include <torch/types.h>

namespace vit {

torch::Tensor gelu(const torch::Tensor& x);

// Whether gelu() runs our kernel for `x` rather than torch::gelu.
bool gelu_uses_own_kernel(const torch::Tensor& x);

}  // namespace vit
