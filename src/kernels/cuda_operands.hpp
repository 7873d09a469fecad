#pragma once
// What the host side of vit's CUDA kernels (kernels/product_reductions,
// gpu_residual_norm) asks of a tensor before it hands a kernel its pointer.
// Private to kernels/.
#include <torch/types.h>

#include <cstdint>

#include "cuda/half_type.hpp"

namespace vit::detail {

// Whether t's data starts on a 16-byte boundary, as the kernels' vector
// loads need.
inline bool is_16_byte_aligned(const torch::Tensor& t) {
  return reinterpret_cast<uintptr_t>(t.data_ptr()) % 16 == 0;
}

// t's 16-bit type as the kernels name it: bf16, else fp16.
inline cuda::HalfType half_type_of(const torch::Tensor& t) {
  return t.scalar_type() == torch::kBFloat16 ? cuda::HalfType::kBFloat16 : cuda::HalfType::kFloat16;
}

}  // namespace vit::detail
