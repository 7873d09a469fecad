#include "vit/train/step_totals.hpp"

#include <torch/torch.h>

namespace vit {
namespace {
enum Slot : int64_t { kLossSum, kCorrect, kSteps, kFirstBad, kBadKind, kBadValue, kSlots };
constexpr double kBadLoss = 1, kBadNorm = 2;
}  // namespace

StepTotals::StepTotals(c10::Device device)
    : sums_(torch::zeros({kSlots}, torch::TensorOptions().dtype(torch::kFloat64).device(device))) {}

void StepTotals::add(const at::Tensor& loss, const at::Tensor& correct, const at::Tensor& grad_norm,
                     const at::Tensor& overflow) {
  torch::NoGradGuard no_grad;
  const auto loss_value = loss.detach().to(torch::kFloat64).view({1});
  sums_.narrow(0, kLossSum, 3)
      .add_(torch::cat(
          {loss_value, correct.to(torch::kFloat64).view({1}), torch::ones_like(loss_value)}));
  const auto bad_loss = torch::isfinite(loss_value).logical_not();  // bool (1)
  auto bad = bad_loss;
  auto kind_value = torch::cat({torch::full_like(loss_value, kBadLoss), loss_value});
  if (grad_norm.defined()) {
    const auto norm_value = grad_norm.detach().to(torch::kFloat64).view({1});
    auto bad_norm = torch::isfinite(norm_value).logical_not();
    if (overflow.defined()) bad_norm = bad_norm.logical_and(overflow.view({1}) == 0);
    bad = bad_loss.logical_or(bad_norm);
    kind_value = torch::where(bad_loss, kind_value,
                              torch::cat({torch::full_like(norm_value, kBadNorm), norm_value}));
  }
  // Only the first bad step of the interval is kept.
  const auto first = bad.logical_and(sums_.narrow(0, kFirstBad, 1) == 0);
  const auto record = torch::cat({sums_.narrow(0, kSteps, 1), kind_value});
  auto kept = sums_.narrow(0, kFirstBad, 3);
  kept.copy_(torch::where(first, record, kept));
}

StepTotals::Values StepTotals::read() const {
  const auto host = sums_.cpu();
  const auto* s = host.data_ptr<double>();
  Values v;
  v.loss_sum = s[kLossSum];
  v.correct = static_cast<int64_t>(s[kCorrect]);
  v.steps = static_cast<int64_t>(s[kSteps]);
  v.first_non_finite = static_cast<int64_t>(s[kFirstBad]);
  if (v.first_non_finite > 0) {
    v.non_finite_what = s[kBadKind] == kBadLoss ? "training loss" : "gradient norm";
    v.non_finite_value = s[kBadValue];
  }
  return v;
}

void StepTotals::reset() {
  sums_.zero_();
}

}  // namespace vit
