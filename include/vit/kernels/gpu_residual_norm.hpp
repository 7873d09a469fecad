#pragma once
// On GPUs, 16-bit end to end (train.bf16_activations): a pre-norm block's
// residual add and the LayerNorm after it, z = x + y and n = layer_norm(z),
// as one kernel each way (kernels/cuda/residual_layer_norm.cu):
// - forward, one pass over x and y that writes z, n and each row's mean and
//   rstd;
// - backward, one pass over dn, dz and z that writes dx (the stream's dz
//   plus the norm's x gradient, which is also y's) and sums the norm's weight
//   and bias gradients on the way.
// Apart, LibTorch's ops ran the add, a LayerNorm forward well below the
// GPU's memory speed on rows of 384, the norm's x gradient, a second pass
// over dy and x for the parameter gradients (kernels/product_reductions),
// and autograd's add of z's two gradients: five passes over memory where two
// suffice (measured: docs/benchmarks.md, "Where the step goes").
//
// The arithmetic is LibTorch's: z rounded to x's type as the add rounds it,
// the biased variance, fp32 within each row. Only the order of the sums
// differs, and dx is rounded once instead of twice.
#include <torch/types.h>

#include "vit/kernels/residual_norm.hpp"  // ResidualAndNorm

namespace vit {

// Whether gpu_residual_then_norm() runs the kernels for x, weight and bias:
// where kernels/product_reductions applies (16-bit CUDA tensors outside
// autocast, with gradients to compute), for rows of a width the kernels take
// (a multiple of 8, at most 1024) with x contiguous and 16-byte aligned; y,
// where given, like x.
bool gpu_residual_norm_applies(const torch::Tensor& x, const torch::Tensor& weight,
                               const torch::Tensor& bias, const torch::Tensor& y = {});

// {z, n}: z = x + y, n = layer_norm(z, weight, bias, eps) over the last
// dimension, in x's dtype. y undefined: no add (z is x itself). Where
// gpu_residual_norm_applies() does not hold, LibTorch's add and
// vit::layer_norm.
ResidualAndNorm gpu_residual_then_norm(const torch::Tensor& x, const torch::Tensor& y,
                                       const torch::Tensor& weight, const torch::Tensor& bias,
                                       double eps);

namespace detail {

// gpu_residual_then_norm()'s autograd functions whatever the device: on the
// CPU with LibTorch's ops doing the kernels' arithmetic (forward, and the
// backward's formulas and gradient plumbing), for the tests.
ResidualAndNorm residual_then_norm_functions(const torch::Tensor& x, const torch::Tensor& y,
                                             const torch::Tensor& weight, const torch::Tensor& bias,
                                             double eps);

}  // namespace detail

}  // namespace vit
