#pragma once
// The attention's core, straight from the fused qkv projection: the bias
// added, the heads split, softmax(scale q k^T) v for every (batch, head), and
// the heads merged back side by side, the input of the output projection.
//
// On CPUs with AMX, bf16 projections go through a kernel of our own
// (kernels/amx/attention_head), forward and backward, one (batch, head) at a
// time:
// - each head's rows are packed for AMX's tiles straight from the
//   projection, the bias added on the way (as kernels/head_split adds it),
//   so the heads are never split into tensors of their own;
// - the five products run on the tiles, the scores and the softmax in the
//   thread's scratch, in cache, between them;
// - the output goes straight into the merged layout, and the backward's
//   gradients straight into the projection's, with the bias's summed.
// LibTorch 1.13 runs these small batched products through oneDNN at 300-480
// GFLOP/s on the CPU benchmark job (384 heads of 65 x 64 a block), and
// writes the heads, the scores, the probabilities and the head-major output
// to memory between its passes.
//
// On the CPU benchmark job (bf16, batch 128, Intel Xeon with AMX, 2 threads)
// this took the training step from 293 to 271 ms: the products, the softmax,
// the head split and its copies 57 ms a step before, the kernel 38 after
// (docs/benchmarks.md).
//
// The scores and the softmax's gradient stay in fp32 inside the kernel; the
// probabilities and the gradient of the scores are rounded to bf16 before the
// products that read them, as LibTorch's bf16 operators round them. Its bf16
// results (and the biased q, k and v) are rounded by vcvtneps2bf16: to
// nearest, ties to even, subnormals to zero.
// Everything else (other CPUs and dtypes, strided projections, head widths
// that are not a multiple of 32) runs LibTorch's operators.
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
