#pragma once
// y = x W^T + b, the fully connected layer, with oneDNN's sgemm for fp32.
//
// Debian's LibTorch runs fp32 matrix products through OpenBLAS, and it links
// oneDNN too, for bf16 and convolutions. On the job's shapes (8,320 x 192 by
// 192 x 576 and the like, 2 threads, AMD EPYC Zen 4) oneDNN's sgemm does the
// forward and both backward products of a block's four layers in 108 ms
// against OpenBLAS's 150: fp32 training is mostly these products. Where the
// build has it (VIT_WITH_ONEDNN_SGEMM: LibTorch itself links the system's
// libdnnl), fp32 inputs on the CPU with autocast off go through it, forward
// and backward. Everything else (bf16 and autocast, other devices, pip's
// LibTorch, which brings MKL) runs ATen's linear.
#include <torch/types.h>

namespace vit {

// x (..., in), weight (out, in), bias (out) or undefined. Returns (..., out),
// differentiable in all three, as at::linear.
torch::Tensor linear(const torch::Tensor& x, const torch::Tensor& weight,
                     const torch::Tensor& bias = {});

// Whether linear() runs oneDNN's sgemm for these tensors rather than ATen's
// linear.
bool linear_uses_own_kernel(const torch::Tensor& x, const torch::Tensor& weight,
                            const torch::Tensor& bias = {});

}  // namespace vit
