#pragma once
// LayerNorm over the last dimension with a weight and a bias, as torch::layer_norm
// computes it (biased variance, eps inside the square root). On CPUs with AVX2 or
// AVX-512, contiguous fp32 inputs use our kernel, which can write bf16 directly;
// everything else runs torch::layer_norm, cast where bf16 was asked for.
#include <torch/types.h>

namespace vit {

// `to_bf16`: the output is bf16 (else x's dtype). The gradient of x is x's dtype.
torch::Tensor layer_norm(const torch::Tensor& x, const torch::Tensor& weight,
                         const torch::Tensor& bias, double eps, bool to_bf16 = false);

// layer_norm() for a linear layer's input: bf16 where that layer runs in bf16 on the
// CPU under autocast, x's dtype elsewhere.
torch::Tensor layer_norm_for_linear(const torch::Tensor& x, const torch::Tensor& weight,
                                    const torch::Tensor& bias, double eps);

// Whether layer_norm_for_linear(x, ...) returns bf16.
bool normalizes_to_bf16_for_linear(const torch::Tensor& x);

// Whether layer_norm() runs our kernel for these tensors rather than torch::layer_norm.
bool layer_norm_uses_own_kernel(const torch::Tensor& x, const torch::Tensor& weight,
                                const torch::Tensor& bias);

}  // namespace vit
