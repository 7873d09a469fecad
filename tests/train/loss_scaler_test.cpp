#include <limits>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "vit/train/loss_scaler.hpp"

namespace vit {
namespace {

TEST(LossScaler, DisabledItChangesNothing) {
  LossScaler scaler(false, c10::kCPU);
  EXPECT_FALSE(scaler.enabled());
  const auto loss = torch::tensor(0.75);
  EXPECT_TRUE(scaler.scale(loss).equal(loss));
  auto gradients = torch::tensor({1.0f, 2.0f});
  scaler.unscale(gradients);
  EXPECT_TRUE(gradients.equal(torch::tensor({1.0f, 2.0f})));
  EXPECT_FALSE(scaler.found_inf().defined());
  EXPECT_EQ(scaler.value(), 1.0);
}

// torch.amp.GradScaler's defaults: 65536, halved at once on an overflow,
// doubled after 2000 good steps in a row.
TEST(LossScaler, HalvesOnOverflowAndDoublesAfterAGoodRun) {
  LossScaler scaler(true, c10::kCPU);
  EXPECT_EQ(scaler.value(), 65536.0);
  EXPECT_EQ(scaler.scale(torch::tensor(0.5f)).item<float>(), 32768.0f);

  auto gradients = torch::tensor({65536.0f, -131072.0f});
  scaler.unscale(gradients);
  EXPECT_TRUE(gradients.equal(torch::tensor({1.0f, -2.0f})));
  EXPECT_EQ(scaler.found_inf().item<float>(), 0.0f);
  scaler.update();
  EXPECT_EQ(scaler.value(), 65536.0);

  auto overflowed = torch::tensor({1.0f, std::numeric_limits<float>::infinity()});
  scaler.unscale(overflowed);
  EXPECT_EQ(scaler.found_inf().item<float>(), 1.0f);
  scaler.update();
  EXPECT_EQ(scaler.value(), 32768.0);

  // The good step before the overflow no longer counts: 1999 more are not enough.
  for (int i = 0; i < 1999; ++i) {
    auto g = torch::ones({2});
    scaler.unscale(g);
    scaler.update();
  }
  EXPECT_EQ(scaler.value(), 32768.0);
  auto g = torch::ones({2});
  scaler.unscale(g);
  EXPECT_EQ(scaler.found_inf().item<float>(), 0.0f);
  scaler.update();
  EXPECT_EQ(scaler.value(), 65536.0);
}

}  // namespace
}  // namespace vit
