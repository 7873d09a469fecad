#pragma once
// The attention's heads out of a fused projection: (B, N, P*H*Dh), the P parts side
// by side (q, k, v for P = 3), into P contiguous (B, H, N, Dh) tensors, with a
// backward that writes the P gradients straight back into the (B, N, P*H*Dh) layout.
// On CPUs with AVX2 or AVX-512 our kernel does it for contiguous fp32 and bf16
// inputs, and can add the projection's bias on the way; other devices get strided
// views. (Measured: docs/benchmarks.md, "Why the own kernels".)
#include <torch/types.h>

#include <vector>

namespace vit {

// x: (B, N, parts*heads*head_dim). Returns `parts` tensors (B, heads, N,
// head_dim) in x's dtype, differentiable with respect to x; contiguous on the
// CPU. Throws std::invalid_argument for any other shape.
std::vector<torch::Tensor> split_heads(const torch::Tensor& x, int64_t parts, int64_t heads,
                                       int64_t head_dim);

// split_heads(x + bias) for a fused projection's product x, computed without its
// fp32 bias (parts*heads*head_dim): the sum in fp32, rounded once to x's dtype.
// Gradients: x's in its dtype, the bias's in fp32. Without our kernel: split_heads(x
// + bias in x's dtype). Throws std::invalid_argument for an undefined bias or a shape
// split_heads rejects.
std::vector<torch::Tensor> split_heads_with_bias(const torch::Tensor& x, const torch::Tensor& bias,
                                                 int64_t parts, int64_t heads, int64_t head_dim);

// Whether split_heads_with_bias() runs our kernel: a contiguous fp32 CPU bias of x's
// width and a contiguous fp32 or bf16 CPU x, with AVX2 or AVX-512. With x undefined:
// whether it would for such an x (for a caller that has yet to compute x).
bool split_heads_with_bias_uses_own_kernel(const torch::Tensor& bias, const torch::Tensor& x = {});

}  // namespace vit
