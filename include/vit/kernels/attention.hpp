#pragma once
// The attention's core, softmax(scale q k^T) v, for every (batch, head), with
// the heads merged back side by side: the input of the output projection.
//
// On CPUs with AMX, bf16 heads go through a kernel of our own
// (kernels/amx/attention_head), forward and backward: each head's products on
// AMX's tiles, the scores and the softmax kept in the thread's cache between
// them, the output written straight into the merged layout. LibTorch 1.13
// runs these small batched products through oneDNN at 300-480 GFLOP/s on the
// CPU benchmark job (384 heads of 65 x 64 a block), a tenth of the tiles'
// rate on the linear layers, and writes the scores, the probabilities and the
// head-major output to memory between its passes.
//
// The scores and the softmax's gradient stay in fp32 inside the kernel; the
// probabilities and the gradient of the scores are rounded to bf16 before
// the products that read them, as the bf16 path of LibTorch's operators
// rounds them. Everything else (other CPUs and dtypes, strided heads, head
// widths that are not a multiple of 32) runs LibTorch's operators.
#include <torch/types.h>

namespace vit {

// q (B, H, Nq, Dh), k and v (B, H, N, Dh), of one dtype. Returns
// (B, Nq, H*Dh) in that dtype, with gradients for q, k and v.
torch::Tensor attention_heads_merged(const torch::Tensor& q, const torch::Tensor& k,
                                     const torch::Tensor& v, double scale);

// Whether attention_heads_merged() runs our kernel for these heads.
bool attention_uses_own_kernel(const torch::Tensor& q, const torch::Tensor& k,
                               const torch::Tensor& v);

}  // namespace vit
