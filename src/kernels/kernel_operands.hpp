#pragma once
// What the model's own CPU kernels (kernels/gelu, layer_norm, residual,
// softmax, linear, batched_matmul) take as operands; anything else goes to
// LibTorch's operators.
#include <torch/types.h>

namespace vit::detail {

// A defined, strided (dense) tensor in CPU memory: one whose data_ptr a
// kernel may read. Sparse tensors are not, and have no is_contiguous().
inline bool is_dense_on_cpu(const torch::Tensor& t) {
  return t.defined() && t.device().is_cpu() && t.layout() == torch::kStrided;
}

inline bool is_contiguous_on_cpu(const torch::Tensor& t) {
  return is_dense_on_cpu(t) && t.is_contiguous();
}

inline bool is_float_or_bf16(torch::ScalarType t) {
  return t == torch::kFloat || t == torch::kBFloat16;
}

}  // namespace vit::detail
