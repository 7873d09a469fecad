#include "vit/kernels/adamw.hpp"

#include <ATen/Parallel.h>
#include <ATen/record_function.h>
#include <torch/torch.h>

#include <cmath>

#include "kernel_operands.hpp"
#include "simd/kernels.hpp"

namespace vit {
namespace {

// Values per parallel task: a few pages of each of the four arrays.
constexpr int64_t kAdamWGrain = 1 << 14;

bool is_contiguous_float(const torch::Tensor& t) {
  return detail::is_contiguous_on_cpu(t) && t.scalar_type() == torch::kFloat;
}

}  // namespace

bool adamw_uses_own_kernel(const torch::Tensor& values, const torch::Tensor& gradients,
                           const torch::Tensor& first_moment, const torch::Tensor& second_moment) {
  const int64_t n = values.defined() ? values.numel() : -1;
  for (const auto* t : {&values, &gradients, &first_moment, &second_moment})
    if (!is_contiguous_float(*t) || t->numel() != n) return false;
  return detail::simd_level() != detail::SimdLevel::kNone;
}

void adamw_update(const torch::Tensor& values, const torch::Tensor& gradients,
                  const torch::Tensor& first_moment, const torch::Tensor& second_moment,
                  const AdamWUpdate& u) {
  RECORD_FUNCTION("vit::adamw_update", std::vector<c10::IValue>{});
  const detail::AdamWStep step{static_cast<float>(u.beta1),
                               static_cast<float>(1.0 - u.beta1),
                               static_cast<float>(u.beta2),
                               static_cast<float>(1.0 - u.beta2),
                               static_cast<float>(1.0 - u.lr * u.weight_decay),
                               static_cast<float>(u.lr / (1.0 - std::pow(u.beta1, u.step))),
                               static_cast<float>(std::sqrt(1.0 - std::pow(u.beta2, u.step))),
                               static_cast<float>(u.eps)};
  float *w = values.data_ptr<float>(), *m = first_moment.data_ptr<float>(),
        *v = second_moment.data_ptr<float>();
  const float* g = gradients.data_ptr<float>();
  at::parallel_for(0, values.numel(), kAdamWGrain, [&](int64_t begin, int64_t end) {
    VIT_SIMD_DISPATCH(adamw_update(w + begin, g + begin, m + begin, v + begin, end - begin, step));
  });
}

}  // namespace vit
