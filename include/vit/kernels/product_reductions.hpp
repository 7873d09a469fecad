#pragma once
// On GPUs, the sums over every row that a backward pass needs (LayerNorm's
// weight and bias gradients, a linear layer's bias gradient), without
// LibTorch's reduction kernels, which fit this job's shapes badly: its
// LayerNorm GammaBetaBackward runs far below the GPU's memory speed on them.
// (measured: docs/benchmarks.md, "Why the own kernels" and "On a GPU")
//
// - LayerNorm (where kernels/gpu_residual_norm does not take its rows) is
//   LibTorch's forward, with its affine part, and LibTorch's
//   backward for x's gradient alone. The weight's and bias's gradients,
//   sum dy (x - mean) rstd and sum dy over the rows, come from one pass over
//   dy and x (kernels/cuda/layer_norm_parameter_gradients.cu), summed in
//   fp32. (Before, the normalized x was kept, the affine part applied in a
//   pass of its own, the weight's gradient taken as the diagonal of
//   dy^T x_hat, and x's gradient rescaled by rstd in another pass.)
// - A linear layer is LibTorch's linear forward, and its backward's bias
//   gradient is 1^T dy, a matrix product, which cuBLAS runs near memory
//   speed. Where the weight or bias has a gradient buffer already (the
//   weight mirror's slices of one flat vector, train/weight_mirror), the
//   product adds into it (beta = 1) and hands autograd no gradient, which
//   it would otherwise add there in a kernel of its own.
//
// The arithmetic is the same function; only the rounding differs. The model
// takes these on CUDA for bf16 and fp16 tensors outside autocast
// (train.bf16_activations); they run on any device (on the CPU, the
// LayerNorm's sums by LibTorch in fp32), so the CPU tests check them
// against LibTorch.
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
