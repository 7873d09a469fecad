#pragma once
// How the model's layers call vit's kernels, private to the model layer.
// Every call reads its parameters through compute_weight: a training step's
// low-precision copies where train/weight_mirror provides them, else the
// module's own fp32 tensors (timm's names stay on the modules).
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/normalization.h>

#include "vit/config.hpp"

namespace vit {

// A LayerNorm of the model's width and epsilon.
torch::nn::LayerNorm make_norm(const ModelConfig& cfg);

// norm(x), through kernels/layer_norm.
torch::Tensor normalized(const torch::nn::LayerNorm& norm, const torch::Tensor& x);

// norm(x) as the input of a linear layer: bf16 straight from the kernel under
// CPU bf16 autocast (kernels/layer_norm's layer_norm_for_linear).
torch::Tensor normalized_for_linear(const torch::nn::LayerNorm& norm, const torch::Tensor& x);

// layer(x) = x W^T + b, through kernels/linear.
torch::Tensor linear(const torch::nn::Linear& layer, const torch::Tensor& x);

// gelu(layer(x)). Where our GELU kernel runs, the layer's bias is added
// inside it (kernels/gelu) rather than by the product.
torch::Tensor linear_gelu(const torch::nn::Linear& layer, const torch::Tensor& x);

}  // namespace vit
