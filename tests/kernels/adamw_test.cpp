#include "vit/kernels/adamw.hpp"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>

#include "kernel_paths.hpp"
#include "tensor_values.hpp"

namespace vit {
namespace {

struct AdamWState {
  torch::Tensor values, gradients, first, second;
};

// Random weights and moments (the second moment non-negative) over n values.
AdamWState random_state(int64_t n) {
  torch::manual_seed(3);
  return {torch::randn({n}), torch::randn({n}) * 0.1, torch::randn({n}) * 0.01,
          torch::rand({n}) * 1e-3};
}

AdamWState copy_of(const AdamWState& s) {
  return {s.values.clone(), s.gradients.clone(), s.first.clone(), s.second.clone()};
}

// torch.optim.AdamW's arithmetic in whole-vector operators, in double.
void reference_update(AdamWState& s, const AdamWUpdate& u) {
  const double correction1 = 1.0 - std::pow(u.beta1, u.step);
  const double correction2 = 1.0 - std::pow(u.beta2, u.step);
  s.first.mul_(u.beta1).add_(s.gradients, 1.0 - u.beta1);
  s.second.mul_(u.beta2).addcmul_(s.gradients, s.gradients, 1.0 - u.beta2);
  const auto denominator = (s.second.sqrt() / std::sqrt(correction2)).add_(u.eps);
  s.values.mul_(1.0 - u.lr * u.weight_decay).addcdiv_(s.first, denominator, -u.lr / correction1);
}

TEST(AdamW, OwnKernelRunsOnContiguousFloatTensorsOfOneSize) {
  const auto s = random_state(100);
  EXPECT_EQ(adamw_uses_own_kernel(s.values, s.gradients, s.first, s.second),
            testing::own_kernels_run())
      << testing::kernel_path();
  EXPECT_FALSE(adamw_uses_own_kernel(s.values, s.gradients.narrow(0, 0, 99), s.first, s.second));
  EXPECT_FALSE(adamw_uses_own_kernel(s.values, s.gradients, s.first.to(torch::kDouble), s.second));
  EXPECT_FALSE(adamw_uses_own_kernel(torch::randn({200}).slice(0, 0, 200, 2), s.gradients, s.first,
                                     s.second));
  EXPECT_FALSE(adamw_uses_own_kernel(torch::Tensor(), s.gradients, s.first, s.second));
}

// Three steps, with and without weight decay and a changing learning rate,
// over a length that ends in a partial vector, against the same arithmetic
// in double: within float's rounding of each operation (6e-8 of its result),
// relative to the whole tensors.
TEST(AdamW, OwnKernelMatchesTheArithmeticInDouble) {
  if (!testing::own_kernels_run()) GTEST_SKIP() << testing::kernel_path();
  AdamWState ours = random_state(4099);
  AdamWState exact = copy_of(ours);
  for (auto* t : {&exact.values, &exact.gradients, &exact.first, &exact.second})
    *t = t->to(torch::kDouble);
  const AdamWUpdate updates[] = {{1e-2, 0.05, 0.9, 0.999, 1e-8, 1},
                                 {3e-3, 0.0, 0.9, 0.999, 1e-8, 2},
                                 {5e-2, 0.05, 0.8, 0.95, 1e-6, 3}};
  for (const auto& u : updates) {
    adamw_update(ours.values, ours.gradients, ours.first, ours.second, u);
    reference_update(exact, u);
  }
  EXPECT_LT(testing::relative_error(ours.first, exact.first), 1e-6);
  EXPECT_LT(testing::relative_error(ours.second, exact.second), 1e-6);
  EXPECT_LT(testing::relative_error(ours.values, exact.values), 1e-6);
  // The weights moved by far more than that: about lr a step.
  EXPECT_GT((ours.values - random_state(4099).values).abs().mean().item<double>(), 1e-2);
}

}  // namespace
}  // namespace vit
