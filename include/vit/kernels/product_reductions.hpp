#pragma once
// On GPUs, the sums over every row that a backward pass needs (LayerNorm's
// weight and bias gradients, a linear layer's bias gradient) as matrix
// products, which cuBLAS runs near memory speed (16 us for the 40 MB of a
// LayerNorm's dy^T x_hat on an H200).
//
// LibTorch computes them with reduction kernels that fit this job's shapes
// badly: on an H200, the p4d384/512 step (25,600 rows of 384) spent 2.85 ms
// of 20.5 in LayerNorm's GammaBetaBackward (114 us a call for a pass over
// 40 MB, about 0.35 TB/s) and 1.93 ms in the linear layers' bias-gradient
// sums (docs/benchmarks.md, "On a GPU").
//
// - LayerNorm normalizes without its affine part (LibTorch's kernel), then
//   applies the weight and bias in one pass, and keeps the normalized x for
//   the backward, where the weight's gradient is the diagonal of dy^T x_hat
//   and the bias's is 1^T dy. x's gradient is LibTorch's LayerNorm backward,
//   given x_hat as its input (mean 0, rstd 1) and scaled by rstd after.
// - A linear layer is LibTorch's linear forward, and its backward's bias
//   gradient is 1^T dy.
//
// The arithmetic is the same function; only the rounding differs (x_hat is
// kept in x's dtype, as is the product's result). The model takes these on
// CUDA for bf16 and fp16 tensors outside autocast (train.bf16_activations);
// they run on any device, so the CPU tests check them against LibTorch.
#include <torch/types.h>

namespace vit {

// torch::layer_norm(x, {D}, weight, bias, eps) over x's last dimension D.
torch::Tensor layer_norm_with_product_gradients(const torch::Tensor& x, const torch::Tensor& weight,
                                                const torch::Tensor& bias, double eps);

// at::linear(x, weight, bias), bias defined.
torch::Tensor linear_with_product_bias_gradient(const torch::Tensor& x, const torch::Tensor& weight,
                                                const torch::Tensor& bias);

// Whether the model takes the two above for these tensors: contiguous CUDA
// tensors of one low-precision dtype (bf16 or fp16), a bias, and autocast
// off, with gradients to compute.
bool product_reductions_apply(const torch::Tensor& x, const torch::Tensor& weight,
                              const torch::Tensor& bias);

}  // namespace vit
