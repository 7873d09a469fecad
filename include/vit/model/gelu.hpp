#pragma once
// GELU in its exact form, x Phi(x) with Phi the standard normal CDF, as
// torch::gelu and timm's nn.GELU compute it.
//
// On CPUs with AVX-512, contiguous fp32 and bf16 tensors go through a kernel
// of our own, forward and backward (model/gelu_avx512): LibTorch 1.13's CPU
// GELU runs its AVX2 code through Sleef at about a third of the speed, and
// GELU over the MLP's hidden activations is one of the largest operators
// outside the matrix products of a training step (docs/benchmarks.md). The
// results agree with torch::gelu to float rounding; bf16 outputs are within one
// bf16 step of it. Everything else (other devices and dtypes, strided views,
// CPUs without AVX-512) runs torch::gelu.
#include <torch/types.h>

namespace vit {

torch::Tensor gelu(const torch::Tensor& x);

// Whether gelu() runs our kernel for `x` rather than torch::gelu.
bool gelu_uses_own_kernel(const torch::Tensor& x);

}  // namespace vit
