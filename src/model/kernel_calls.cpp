#include "kernel_calls.hpp"

#include "vit/kernels/gelu.hpp"
#include "vit/kernels/layer_norm.hpp"
#include "vit/kernels/linear.hpp"
#include "vit/model/weight_substitution.hpp"

namespace vit {

torch::nn::LayerNorm make_norm(const ModelConfig& cfg) {
  return torch::nn::LayerNorm(torch::nn::LayerNormOptions({cfg.dim}).eps(cfg.layer_norm_eps));
}

torch::Tensor normalized(const torch::nn::LayerNorm& norm, const torch::Tensor& x) {
  return vit::layer_norm(x, compute_weight(norm->weight), compute_weight(norm->bias),
                         norm->options.eps());
}

torch::Tensor normalized_for_linear(const torch::nn::LayerNorm& norm, const torch::Tensor& x) {
  return layer_norm_for_linear(x, compute_weight(norm->weight), compute_weight(norm->bias),
                               norm->options.eps());
}

// kernels/linear runs oneDNN's sgemm in fp32 where the build has it, else
// ATen's linear, which folds a contiguous (B, N, in) input into one addmm:
// GEMM with the bias. The C++ frontend's Linear (LibTorch 1.13) runs matmul
// and then a separate in-place bias add for any input that is not 2-D: one
// more pass over every activation, forward and backward.
torch::Tensor linear(const torch::nn::Linear& layer, const torch::Tensor& x) {
  return vit::linear(x, compute_weight(layer->weight), compute_weight(layer->bias));
}

torch::Tensor linear_gelu(const torch::nn::Linear& layer, const torch::Tensor& x) {
  const auto weight = compute_weight(layer->weight), bias = compute_weight(layer->bias);
  if (!gelu_with_bias_uses_own_kernel(layer->bias)) return vit::gelu(vit::linear(x, weight, bias));
  return gelu_with_bias(vit::linear(x, weight), layer->bias);
}

}  // namespace vit
