#pragma once
// The residual connection after a linear layer, x + (y + bias), with the layer's
// bias left out of its matrix product and added here instead. On CPUs with AVX2 or
// AVX-512 our kernel does each direction in one pass; everything else runs ATen's
// x + (y + bias).
#include <torch/types.h>

namespace vit {

// x fp32 (..., d); y shaped like x, fp32 or bf16; bias fp32 (d). Returns fp32.
// Gradients: x gets the output's, y the output's in y's dtype, the bias the
// output's summed over every row.
torch::Tensor add_biased_residual(const torch::Tensor& x, const torch::Tensor& y,
                                  const torch::Tensor& bias);

// Whether add_biased_residual() runs our kernel for these tensors rather than
// ATen's adds; with y undefined, whether it would for any contiguous fp32 or
// bf16 y shaped like x (for a caller that has yet to compute y).
bool biased_residual_uses_own_kernel(const torch::Tensor& x, const torch::Tensor& bias,
                                     const torch::Tensor& y = {});

}  // namespace vit
