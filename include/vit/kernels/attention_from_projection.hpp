#pragma once
// The attention's core from the fused qkv projection's output: the bias added,
// the heads split, softmax(scale q k^T) v per (batch, head), the heads merged.
//
// On CPUs with AMX, bf16 runs our kernel (kernels/amx/attention_head), forward
// and backward, one (batch, head) at a time: each head's rows are packed for
// AMX's tiles straight from the projection with the bias added, the five
// products run on the tiles with the scores and the softmax in the thread's
// scratch, and outputs and gradients (the bias's summed) go straight into the
// merged and the projection's layouts. Why: LibTorch runs these small products
// slowly and writes heads, scores and probabilities to memory between passes.
// Other CPUs and dtypes, strided projections and head widths that are not a
// multiple of 32 run LibTorch's operators.
// (measured: docs/benchmarks.md, "Why the own kernels")
//
// Numerics: the scores and the softmax's gradient stay fp32; the probabilities
// and the scores' gradient are rounded to bf16 before the products that read
// them, as LibTorch's bf16 operators round them; bf16 results (and the biased
// q, k and v) by vcvtneps2bf16: to nearest, ties to even, subnormals to zero.
#include <torch/types.h>

namespace vit {

// qkv (B, N, 3*H*Dh): the fused projection's output without its bias, the
// parts q, k and v side by side, each H heads of Dh; bias (3*H*Dh) in the
// same order, fp32, or undefined for none. Returns softmax(scale q k^T) v
// with the heads merged, (B, N, H*Dh) in qkv's dtype, with gradients for qkv
// and the bias.
torch::Tensor attention_from_projection(const torch::Tensor& qkv, const torch::Tensor& bias,
                                        int64_t heads, double scale);

// Whether attention_from_projection() runs our kernel for these arguments.
bool attention_from_projection_uses_own_kernel(const torch::Tensor& qkv, const torch::Tensor& bias,
                                               int64_t heads);

// The same, asked before the projection: whether it will run our kernel on
// the output of a linear layer from x (B, N, D) to 3*heads*head_dim
// features, under the current autocast state (the output is bf16 where x is,
// or where CPU autocast computes in bf16). The model asks, so that it splits
// the heads itself where the kernel will not run.
bool attention_from_projection_will_use_own_kernel(const torch::Tensor& x,
                                                   const torch::Tensor& bias, int64_t heads,
                                                   int64_t head_dim);

}  // namespace vit
