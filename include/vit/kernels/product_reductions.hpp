#pragma once
// On GPUs, the sums over every row that a backward pass needs (LayerNorm's weight
// and bias gradients, a linear layer's bias gradient), without LibTorch's reduction
// kernels, which fit this job's shapes badly. The arithmetic is LibTorch's; only the
// rounding differs. They run on any device (on the CPU, LayerNorm's sums by LibTorch
// in fp32). (Measured: docs/benchmarks.md, "Why the own kernels" and "On a GPU".)
#include <torch/types.h>

namespace vit {

// torch::layer_norm(x, {D}, weight, bias, eps) over x's last dimension D.
torch::Tensor layer_norm_with_product_gradients(const torch::Tensor& x, const torch::Tensor& weight,
                                                const torch::Tensor& bias, double eps);

// at::linear(x, weight, bias), bias defined.
torch::Tensor linear_with_product_bias_gradient(const torch::Tensor& x, const torch::Tensor& weight,
                                                const torch::Tensor& bias);

// Whether the model takes the two above: contiguous CUDA tensors of one 16-bit
// dtype, a bias, autocast off, and gradients to compute.
bool product_reductions_apply(const torch::Tensor& x, const torch::Tensor& weight,
                              const torch::Tensor& bias);

}  // namespace vit
