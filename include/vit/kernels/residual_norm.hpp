#pragma once
// A pre-norm transformer's seam: the residual connection after a linear layer,
// z = x + (y + bias) with the layer's bias left out of its product
// (kernels/residual_add), and the LayerNorm the next layer reads, n = layer_norm(z)
// (kernels/layer_norm). On CPUs with AVX2 or AVX-512 our kernel does each direction
// in one pass, to the same bits as the two apart; everything else runs them apart.
#include <torch/types.h>

namespace vit {

struct ResidualAndNorm {
  torch::Tensor sum;         // z, fp32 like x
  torch::Tensor normalized;  // layer_norm(z): bf16 where asked for, else fp32
};

// x fp32 (..., d); y shaped like x, fp32 or bf16; bias, weight and norm_bias
// fp32 (d). `to_bf16`: the normalized output in bf16. Gradients as the two
// apart give them: x gets z's plus the norm's, y the same in y's dtype, bias
// that summed over the rows, weight and norm_bias the norm's.
ResidualAndNorm add_biased_residual_then_norm(const torch::Tensor& x, const torch::Tensor& y,
                                              const torch::Tensor& bias,
                                              const torch::Tensor& weight,
                                              const torch::Tensor& norm_bias, double eps,
                                              bool to_bf16);

// Whether add_biased_residual_then_norm() runs our kernel: where both
// add_biased_residual and layer_norm would, and y is bf16 exactly when `to_bf16`
// (y undefined: any contiguous y shaped like x that fits).
bool biased_residual_then_norm_uses_own_kernel(const torch::Tensor& x, const torch::Tensor& bias,
                                               const torch::Tensor& weight,
                                               const torch::Tensor& norm_bias, bool to_bf16,
                                               const torch::Tensor& y = {});

}  // namespace vit
