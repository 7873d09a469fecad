#pragma once
// y = x W^T + b, the fully connected layer. Where the build has it
// (VIT_WITH_ONEDNN_SGEMM), fp32 inputs on the CPU with autocast off use oneDNN's
// sgemm, forward and backward; everything else runs ATen's linear.
#include <torch/types.h>

namespace vit {

// x (..., in), weight (out, in), bias (out) or undefined. Returns (..., out),
// differentiable in all three, as at::linear.
torch::Tensor linear(const torch::Tensor& x, const torch::Tensor& weight,
                     const torch::Tensor& bias = {});

// Whether linear() runs oneDNN's sgemm for these tensors rather than ATen's.
bool linear_uses_own_kernel(const torch::Tensor& x, const torch::Tensor& weight,
                            const torch::Tensor& bias = {});

}  // namespace vit
