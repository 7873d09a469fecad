#pragma once
// The attention's core from the fused qkv projection's output: the bias added, the
// heads split, softmax(scale q k^T) v per (batch, head), the heads merged. On CPUs
// with AMX, bf16 runs our kernel (kernels/amx/attention_head), forward and backward;
// other CPUs and dtypes, strided projections and head widths that are not a multiple
// of 32 run LibTorch's operators. Numerics: the scores and the softmax's gradient
// stay fp32; the probabilities and the scores' gradient are rounded to bf16 before
// the products that read them, as LibTorch's bf16 operators round them; bf16 results
// (and the biased q, k and v) round to nearest, ties to even, subnormals to zero.
#include <torch/types.h>

namespace vit {

// qkv (B, N, 3*H*Dh): the fused projection's output without its bias, q, k and v
// side by side, each H heads of Dh; bias (3*H*Dh) fp32, or undefined for none.
// Returns (B, N, H*Dh) in qkv's dtype, with gradients for qkv and the bias.
torch::Tensor attention_from_projection(const torch::Tensor& qkv, const torch::Tensor& bias,
                                        int64_t heads, double scale);

// Whether attention_from_projection() runs our kernel for these arguments.
bool attention_from_projection_uses_own_kernel(const torch::Tensor& qkv, const torch::Tensor& bias,
                                               int64_t heads);

// The same, asked before the projection: whether it will, under the current autocast
// state, for a linear layer's output from x (B, N, D) to 3*heads*head_dim features.
bool attention_from_projection_will_use_own_kernel(const torch::Tensor& x,
                                                   const torch::Tensor& bias, int64_t heads,
                                                   int64_t head_dim);

}  // namespace vit
