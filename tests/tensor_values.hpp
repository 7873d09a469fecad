#pragma once
// Small tensors written out in a test, and their comparison with a result.
#include <algorithm>
#include <cstdint>
#include <vector>

#include <torch/torch.h>

namespace vit::testing {

// `v` as a double tensor of `shape`.
inline torch::Tensor values(const std::vector<double>& v, std::vector<int64_t> shape) {
  return torch::tensor(v, torch::kDouble).view(shape);
}

// The same sizes, and every element within `tol` of the expected one
// (absolute, compared in double).
inline bool near(const torch::Tensor& actual, const torch::Tensor& expected, double tol) {
  return actual.sizes() == expected.sizes() &&
         torch::allclose(actual.to(torch::kDouble), expected.to(torch::kDouble), /*rtol=*/0.0,
                         /*atol=*/tol);
}

// |actual - expected| / |expected| over the whole tensors (Frobenius norms),
// in double on the CPU, wherever the two live.
inline double relative_error(const torch::Tensor& actual, const torch::Tensor& expected) {
  const auto a = actual.detach().to(torch::kCPU, torch::kDouble);
  const auto e = expected.detach().to(torch::kCPU, torch::kDouble);
  return (a - e).norm().item<double>() / std::max(e.norm().item<double>(), 1e-30);
}

}  // namespace vit::testing
