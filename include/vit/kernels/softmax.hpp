#pragma once
// The attention's softmax: softmax(scale x) over the last dimension, computed
// in fp32 as torch::softmax(x * scale, -1, torch::kFloat) computes it, and
// returned in fp32 or bf16.
//
// On CPUs with AVX2 or AVX-512, contiguous fp32 and bf16 inputs go through a
// kernel of our own, forward and backward (kernels/simd/softmax.inc), which
// folds in the scale and the casts: LibTorch takes a pass for the scale, one
// to widen bf16 scores to fp32, one for the softmax, one to narrow the
// probabilities to bf16 for the next product, and the same again backward.
// LibTorch 1.13's fp32 softmax is also slow on short rows such as the
// attention's. Everything else (other devices and dtypes, strided views, CPUs
// without AVX2) runs torch::softmax and casts.
// (measured: docs/benchmarks.md, "Why the own kernels")
#include <torch/types.h>

namespace vit {

// `out_dtype`: torch::kFloat or torch::kBFloat16. The gradient of x is x's
// dtype. Throws std::invalid_argument for another out_dtype.
torch::Tensor scaled_softmax(const torch::Tensor& x, double scale, torch::ScalarType out_dtype);

// Whether scaled_softmax() runs our kernel for these arguments rather than torch::softmax.
bool scaled_softmax_uses_own_kernel(const torch::Tensor& x, torch::ScalarType out_dtype);

}  // namespace vit
