#pragma once
// y = x W^T + b, the fully connected layer, with oneDNN's sgemm for fp32.
//
// Debian's LibTorch runs fp32 matrix products through OpenBLAS, and it links
// oneDNN too, for bf16 and convolutions. On the job's shapes oneDNN's sgemm
// is faster than OpenBLAS, and fp32 training is mostly these products. Where
// the build has it (VIT_WITH_ONEDNN_SGEMM: LibTorch itself links the system's
// libdnnl), fp32 inputs on the CPU with autocast off go through it, forward
// and backward. Everything else (bf16 and autocast, other devices, pip's
// LibTorch, which brings MKL) runs ATen's linear.
// (measured: docs/benchmarks.md, "Why the own kernels")
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
