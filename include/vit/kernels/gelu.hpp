#pragma once
// GELU in its exact form, x Phi(x) with Phi the standard normal CDF, as torch::gelu
// and timm's nn.GELU. On CPUs with AVX2 or AVX-512, contiguous fp32 and bf16 tensors
// use our kernel (kernels/simd/gelu.inc), which agrees with the formula to float
// rounding (bf16: within one bf16 step); everything else runs torch::gelu.
#include <torch/types.h>

namespace vit {

torch::Tensor gelu(const torch::Tensor& x);

// Whether gelu() runs our kernel for `x` rather than torch::gelu.
bool gelu_uses_own_kernel(const torch::Tensor& x);

// gelu(h + bias) for a linear layer's product h (..., d), fp32 or bf16, computed
// without its fp32 bias (d). Returns h's dtype. Gradients: h's in its dtype (bf16:
// within two bf16 steps of the exact one); the bias's in fp32. The forward keeps a
// new tensor of h's size, not h. Without our kernel: torch::gelu(h + bias in h's dtype).
torch::Tensor gelu_with_bias(const torch::Tensor& h, const torch::Tensor& bias);

// Whether gelu_with_bias() runs our kernel: gelu_uses_own_kernel(h) and a contiguous
// fp32 CPU bias of h's last size. With h undefined: whether it would for a contiguous
// fp32 or bf16 h (for a caller that has yet to compute h).
bool gelu_with_bias_uses_own_kernel(const torch::Tensor& bias, const torch::Tensor& h = {});

}  // namespace vit
