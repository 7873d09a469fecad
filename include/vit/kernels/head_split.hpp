#pragma once
// The attention's heads out of a fused projection: (B, N, P*H*Dh), the P
// parts side by side (q, k, v for P = 3), into P contiguous (B, H, N, Dh)
// tensors, with a backward that writes the P gradients straight back into
// the (B, N, P*H*Dh) layout.
//
// The plain view-permute-unbind gives strided (B, H, N, Dh) views. The
// matrix products then copy each to a contiguous tensor anyway (the same one
// pass as here), but autograd's way back costs two passes: UnbindBackward
// stacks the three gradients into a (P, B, H, N, Dh) tensor, and the
// permute's and reshape's backward copies that into the projection's layout.
// Here the backward is one pass, and the contiguous heads fold into the
// (B*H, N, Dh) batches of kernels/batched_matmul without a copy. Other
// devices get the strided views (not measured there).
//
// On CPUs with AVX2 or AVX-512 a kernel of our own (kernels/simd/head_split.inc)
// does the copies for contiguous fp32 and bf16 inputs, and can add the
// projection's bias on the way: the product then runs without it (mm, not
// addmm, which first copies the bias into every row of its output), and the
// backward sums the bias's gradient in the pass that writes x's, instead of
// a separate sum over the rows. Its copies are also faster than ATen's.
// (measured: docs/benchmarks.md, "Why the own kernels")
#include <torch/types.h>

#include <vector>

namespace vit {

// x: (B, N, parts*heads*head_dim). Returns `parts` tensors (B, heads, N,
// head_dim) in x's dtype, differentiable with respect to x; contiguous on the
// CPU. Throws std::invalid_argument for any other shape.
std::vector<torch::Tensor> split_heads(const torch::Tensor& x, int64_t parts, int64_t heads,
                                       int64_t head_dim);

// split_heads(x + bias) for a fused projection's product x, left without its
// fp32 bias (parts*heads*head_dim), in x's dtype. The bias is added in fp32
// and the sum rounded once to x's dtype. Gradients: x's in its dtype; the
// bias's in fp32, x's summed over the rows. Where our kernel does not run
// (split_heads_with_bias_uses_own_kernel), split_heads(x + bias in x's
// dtype). Throws std::invalid_argument for an undefined bias or a shape
// split_heads rejects.
std::vector<torch::Tensor> split_heads_with_bias(const torch::Tensor& x, const torch::Tensor& bias,
                                                 int64_t parts, int64_t heads, int64_t head_dim);

// Whether split_heads_with_bias() runs our kernel: a contiguous fp32 CPU bias
// of x's width and a contiguous fp32 or bf16 CPU x, on a CPU with AVX2 or
// AVX-512. With x undefined, whether it would for such an x of the bias's
// width (for a caller that has yet to compute x).
bool split_heads_with_bias_uses_own_kernel(const torch::Tensor& bias, const torch::Tensor& x = {});

}  // namespace vit
