#include "vit/data/mix.hpp"

#include <gtest/gtest.h>
#include <torch/torch.h>

namespace {

TEST(MixBatch, MixupBlendsImagesAndTargetsWithOneWeight) {
  const auto x = torch::rand({4, 1, 4, 4});
  const auto labels = torch::tensor({0, 1, 2, 3}, torch::kInt64);
  vit::AugmentConfig config;
  config.mixup_alpha = 1.0;
  vit::data::Rng rng(3);
  const auto mixed = vit::data::mix_batch(x, labels, 5, config, rng);
  const float lam = mixed.targets[0][0].item<float>();
  EXPECT_GT(lam, 0.0f);
  EXPECT_LT(lam, 1.0f);
  EXPECT_NEAR(mixed.targets[0][3].item<float>(), 1.0f - lam, 1e-6);  // partner of 0 is 3
  EXPECT_EQ(mixed.targets[0][4].item<float>(), 0.0f);
  EXPECT_TRUE(torch::allclose(mixed.images, x * lam + x.flip(0) * (1.0f - lam)));
}

TEST(MixBatch, CutmixTargetsMatchThePastedArea) {
  const auto x = torch::cat({torch::zeros({1, 1, 16, 16}), torch::ones({1, 1, 16, 16})});
  const auto labels = torch::tensor({0, 1}, torch::kInt64);
  vit::AugmentConfig config;
  config.cutmix_alpha = 1.0;
  for (uint64_t seed = 0; seed < 5; ++seed) {
    vit::data::Rng rng(seed);
    const auto mixed = vit::data::mix_batch(x, labels, 2, config, rng);
    const double pasted = mixed.images[0].sum().item<double>() / 256.0;  // ones in image 0
    EXPECT_NEAR(mixed.targets[0][1].item<float>(), pasted, 1e-6) << seed;
    EXPECT_NEAR(mixed.targets[0][0].item<float>(), 1.0 - pasted, 1e-6) << seed;
  }
}

TEST(MixBatch, ZeroProbabilityGivesOneHotTargets) {
  const auto x = torch::rand({3, 1, 2, 2});
  vit::AugmentConfig config;
  config.mixup_alpha = 1.0;
  config.mix_prob = 0.0;
  vit::data::Rng rng(0);
  const auto mixed =
      vit::data::mix_batch(x, torch::tensor({2, 0, 1}, torch::kInt64), 3, config, rng);
  EXPECT_TRUE(torch::equal(mixed.images, x));
  EXPECT_TRUE(torch::equal(
      mixed.targets, torch::tensor({0.f, 0.f, 1.f, 1.f, 0.f, 0.f, 0.f, 1.f, 0.f}).view({3, 3})));
}

}  // namespace
