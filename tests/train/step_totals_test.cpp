#include "vit/train/step_totals.hpp"

#include <cmath>
#include <limits>

#include <gtest/gtest.h>
#include <torch/torch.h>

namespace vit {
namespace {

const double kInf = std::numeric_limits<double>::infinity();

at::Tensor scalar(double v, at::ScalarType type = torch::kFloat32) {
  return torch::tensor(v, torch::TensorOptions().dtype(torch::kFloat64)).to(type);
}

TEST(StepTotals, SumsLossesAndCountsUntilReset) {
  StepTotals totals(c10::kCPU);
  totals.add(scalar(0.5), scalar(3, torch::kInt64), scalar(2.0), {});
  totals.add(scalar(0.25, torch::kBFloat16), scalar(5, torch::kInt64), {}, {});
  StepTotals::Values v = totals.read();
  EXPECT_DOUBLE_EQ(v.loss_sum, 0.75);
  EXPECT_EQ(v.correct, 8);
  EXPECT_EQ(v.steps, 2);
  EXPECT_EQ(v.first_non_finite, 0);
  EXPECT_EQ(v.non_finite_what, "");
  totals.reset();
  totals.add(scalar(1.5), scalar(1, torch::kInt64), {}, {});
  v = totals.read();
  EXPECT_DOUBLE_EQ(v.loss_sum, 1.5);
  EXPECT_EQ(v.correct, 1);
  EXPECT_EQ(v.steps, 1);
}

// The first bad step of an interval is the one named, whatever follows it.
TEST(StepTotals, RemembersTheFirstNonFiniteLossOrNorm) {
  StepTotals totals(c10::kCPU);
  totals.add(scalar(0.5), scalar(1, torch::kInt64), scalar(1.0), {});
  totals.add(scalar(0.5), scalar(1, torch::kInt64), scalar(kInf), {});
  totals.add(scalar(NAN), scalar(0, torch::kInt64), scalar(NAN), {});
  StepTotals::Values v = totals.read();
  EXPECT_EQ(v.steps, 3);
  EXPECT_EQ(v.first_non_finite, 2);
  EXPECT_EQ(v.non_finite_what, "gradient norm");
  EXPECT_EQ(v.non_finite_value, kInf);
  EXPECT_TRUE(std::isnan(v.loss_sum));

  totals.reset();
  totals.add(scalar(0.5), scalar(1, torch::kInt64), {}, {});
  totals.add(scalar(-kInf), scalar(1, torch::kInt64), scalar(1.0), {});
  v = totals.read();
  EXPECT_EQ(v.first_non_finite, 2);
  EXPECT_EQ(v.non_finite_what, "training loss");
  EXPECT_EQ(v.non_finite_value, -kInf);
}

// fp16's loss scaler overflows on purpose now and then: those steps are
// skipped and retried, not errors. A non-finite loss still is one.
TEST(StepTotals, AnOverflowOfTheLossScalerIsNotAnError) {
  StepTotals totals(c10::kCPU);
  const auto overflow = torch::ones({1});
  totals.add(scalar(0.5), scalar(1, torch::kInt64), scalar(kInf), overflow);
  EXPECT_EQ(totals.read().first_non_finite, 0);
  totals.add(scalar(NAN), scalar(1, torch::kInt64), scalar(kInf), overflow);
  const StepTotals::Values v = totals.read();
  EXPECT_EQ(v.first_non_finite, 2);
  EXPECT_EQ(v.non_finite_what, "training loss");
}

}  // namespace
}  // namespace vit
