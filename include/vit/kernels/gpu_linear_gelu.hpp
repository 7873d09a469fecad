#pragma once
// On GPUs, 16-bit end to end (train.bf16_activations): the MLP's first layer
// and its GELU, a = gelu(x W^T + b), with GELU's passes as kernels of vit's
// own (kernels/cuda/gelu.cu) around cuBLAS's product:
// - forward, the product with its bias (cuBLAS's epilogue), then one pass
//   h -> a;
// - backward, one pass over da and h that writes dh = da gelu'(h) and sums
//   it over the rows on the way (the bias's gradient), then the products for
//   x's and W's gradients (kernels/product_reductions's, which add W's into
//   the step's flat gradient buffer).
// Apart, LibTorch's gelu_backward wrote dh and a product 1^T dh read it all
// again for the bias; on ViT-S/16 at batch 256, h is 155 MB a block.
//
// The arithmetic is LibTorch's exact GELU (erf, fp32 inside, each output
// rounded once); only the order of the bias's sums differs.
//
// Not yet run on a GPU, so the model takes it only where the environment
// says VIT_CUDA_GELU=own; its CUDA tests (`scripts/gpu_session.sh
// test-own-gelu`) and the bench's vit-own-gelu decide the default (docs/gpu.md).
#include <torch/types.h>

namespace vit {

// Whether the model takes gpu_linear_gelu() for x, weight and bias: where
// kernels/product_reductions applies (16-bit CUDA tensors outside autocast,
// with gradients to compute), for an output width the kernels take (a
// multiple of 8) with x contiguous, and VIT_CUDA_GELU=own.
bool gpu_linear_gelu_applies(const torch::Tensor& x, const torch::Tensor& weight,
                             const torch::Tensor& bias);

// gelu(at::linear(x, weight, bias)), bias defined, through the kernels where
// gpu_linear_gelu_applies(), else LibTorch's linear and gelu.
torch::Tensor gpu_linear_gelu(const torch::Tensor& x, const torch::Tensor& weight,
                              const torch::Tensor& bias);

namespace detail {

// gpu_linear_gelu()'s autograd function whatever the device: on a GPU the
// kernels for 16-bit tensors; elsewhere LibTorch's ops doing the kernels'
// arithmetic (the forward, the backward's formula, the bias's sum and where
// each gradient goes), for the tests.
torch::Tensor linear_gelu_function(const torch::Tensor& x, const torch::Tensor& weight,
                                   const torch::Tensor& bias);

// Whether the environment asks for the kernels (VIT_CUDA_GELU=own).
bool own_cuda_gelu_requested();

}  // namespace detail

}  // namespace vit
