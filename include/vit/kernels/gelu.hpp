#pragma once
// GELU in its exact form, x Phi(x) with Phi the standard normal CDF, as
// torch::gelu and timm's nn.GELU compute it.
//
// On CPUs with AVX2 or AVX-512, contiguous fp32 and bf16 tensors go through a
// kernel of our own, forward and backward (kernels/simd/gelu.inc, compiled for
// both). Why: torch::gelu is slower, its fp32 backward above all. Results
// agree with the exact formula to float rounding; bf16 outputs are the exact
// value rounded, or one bf16 step from it. Everything else (other devices and
// dtypes, strided views, CPUs without AVX2) runs torch::gelu.
// (measured: docs/benchmarks.md, "Why the own kernels")
#include <torch/types.h>

namespace vit {

torch::Tensor gelu(const torch::Tensor& x);

// Whether gelu() runs our kernel for `x` rather than torch::gelu.
bool gelu_uses_own_kernel(const torch::Tensor& x);

// gelu(h + bias) for a linear layer's product h (..., d), fp32 or bf16, and
// its fp32 bias (d), left out of the product: the bias is added, the GELU
// taken and, backward, the bias's gradient summed, in the passes that already
// read h, instead of LibTorch's addmm copying the bias into every row first
// and a sum over the rows after. Returns h's dtype. Gradients: h's in its
// dtype; the bias's in fp32, the sum over the rows of h's. For the backward,
// the forward keeps the slope gelu'(h + bias) in h's dtype instead of h (a
// new tensor of h's size; h itself is not kept), so the backward multiplies
// instead of computing the erf again; in bf16 the gradient is then rounded
// twice (the slope, the product), within two bf16 steps of the exact one.
// Where our GELU kernel does not run (see gelu_with_bias_uses_own_kernel),
// torch::gelu(h + bias in h's dtype).
torch::Tensor gelu_with_bias(const torch::Tensor& h, const torch::Tensor& bias);

// Whether gelu_with_bias() runs our kernel: gelu_uses_own_kernel(h), and a
// contiguous fp32 CPU bias of h's last size. With h undefined, whether it
// would for a contiguous fp32 or bf16 h of the bias's size (for a caller that
// has yet to compute h).
bool gelu_with_bias_uses_own_kernel(const torch::Tensor& bias, const torch::Tensor& h = {});

}  // namespace vit
