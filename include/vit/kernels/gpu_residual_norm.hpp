#pragma once
// On GPUs, 16-bit end to end (train.bf16_activations): a pre-norm block's residual
// add and the LayerNorm after it, z = x + y and n = layer_norm(z), as one kernel each
// way (kernels/cuda/residual_layer_norm.cu). The arithmetic is LibTorch's (z rounded
// as the add rounds it, the biased variance, fp32 within each row); only the order of
// the sums differs, and dx is rounded once instead of twice.
#include <torch/types.h>

#include "vit/kernels/residual_norm.hpp"  // ResidualAndNorm

namespace vit {

// Whether gpu_residual_then_norm() runs the kernels: where product_reductions_apply
// holds, for rows a multiple of 8 wide and at most 1024, x contiguous and 16-byte
// aligned, and y, where given, like x.
bool gpu_residual_norm_applies(const torch::Tensor& x, const torch::Tensor& weight,
                               const torch::Tensor& bias, const torch::Tensor& y = {});

// {z, n}: z = x + y, n = layer_norm(z, weight, bias, eps) over the last dimension, in
// x's dtype; y undefined: z is x. Elsewhere, LibTorch's add and vit::layer_norm.
ResidualAndNorm gpu_residual_then_norm(const torch::Tensor& x, const torch::Tensor& y,
                                       const torch::Tensor& weight, const torch::Tensor& bias,
                                       double eps);

namespace detail {

// For the tests: gpu_residual_then_norm()'s autograd functions on any device, on the
// CPU with LibTorch's ops doing the kernels' arithmetic.
ResidualAndNorm residual_then_norm_functions(const torch::Tensor& x, const torch::Tensor& y,
                                             const torch::Tensor& weight, const torch::Tensor& bias,
                                             double eps);

}  // namespace detail

}  // namespace vit
