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
// (B*H, N, Dh) batches of kernels/batched_matmul without a copy. Measured by
// LibTorch's profiler on the CPU benchmark job (bf16, batch 128, 2 threads, AMD
// EPYC, LibTorch 1.13): the stack and the copy cost 4-5 ms each per training
// step, this backward 7.9 ms; the forward's copies 2.6 ms against matmul's
// 4.6. Other devices get the strided views (not measured there).
#include <torch/types.h>

#include <vector>

namespace vit {

// x: (B, N, parts*heads*head_dim). Returns `parts` tensors (B, heads, N,
// head_dim) in x's dtype, differentiable with respect to x; contiguous on the
// CPU. Throws std::invalid_argument for any other shape.
std::vector<torch::Tensor> split_heads(const torch::Tensor& x, int64_t parts, int64_t heads,
                                       int64_t head_dim);

}  // namespace vit
