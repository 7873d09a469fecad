#pragma once
// The attention's softmax: softmax(scale x) over the last dimension, computed in
// fp32 as torch::softmax(x * scale, -1, torch::kFloat), returned in fp32 or bf16.
// On CPUs with AVX2 or AVX-512, contiguous fp32 and bf16 inputs use our kernel;
// everything else runs torch::softmax and casts.
#include <torch/types.h>

namespace vit {

// `out_dtype`: torch::kFloat or torch::kBFloat16. The gradient of x is x's
// dtype. Throws std::invalid_argument for another out_dtype.
torch::Tensor scaled_softmax(const torch::Tensor& x, double scale, torch::ScalarType out_dtype);

// Whether scaled_softmax() runs our kernel for these arguments rather than torch::softmax.
bool scaled_softmax_uses_own_kernel(const torch::Tensor& x, torch::ScalarType out_dtype);

}  // namespace vit
