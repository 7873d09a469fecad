#include "vit/data/rand_augment.hpp"

#include <gtest/gtest.h>
#include <torch/torch.h>

using vit::data::AugmentOp;

namespace {

at::Tensor apply(AugmentOp op, const at::Tensor& x, float level) {
  return vit::data::apply_augment_op(op, x, torch::full({x.size(0)}, level));
}

TEST(AugmentOps, ColourOpsGiveHandComputedPixels) {
  const auto x = torch::tensor({0.0f, 0.2f, 0.5f, 0.9f}).view({1, 1, 2, 2});
  // Brightness at level 0.5: factor 1.45, clamped at 1.
  EXPECT_TRUE(torch::allclose(apply(AugmentOp::kBrightness, x, 0.5f),
                              torch::tensor({0.0f, 0.29f, 0.725f, 1.0f}).view({1, 1, 2, 2})));
  // Solarize at strength 0.4: pixels above 0.6 become 1 - x.
  EXPECT_TRUE(torch::allclose(apply(AugmentOp::kSolarize, x, -0.4f),
                              torch::tensor({0.0f, 0.2f, 0.5f, 0.1f}).view({1, 1, 2, 2})));
  // Auto-contrast stretches 0..0.9 to 0..1.
  EXPECT_TRUE(
      torch::allclose(apply(AugmentOp::kAutoContrast, x, 0.0f),
                      torch::tensor({0.0f, 0.2f / 0.9f, 0.5f / 0.9f, 1.0f}).view({1, 1, 2, 2})));
  // Posterize at strength 0.5 keeps 6 bits: 0.5 * 255 = 127.5 -> 124 (a multiple of 4).
  EXPECT_NEAR(apply(AugmentOp::kPosterize, x, 0.5f)[0][0][1][0].item<float>(), 124.0f / 255.0f,
              1e-6);
  // Contrast at level -1 (factor 0.1) pulls towards the mean 0.4.
  EXPECT_NEAR(apply(AugmentOp::kContrast, x, -1.0f)[0][0][1][1].item<float>(), 0.4f + 0.05f, 1e-6);
}

TEST(AugmentOps, SharpnessUsesPilsSmoothKernel) {
  // Flat 0.5: inside, the blur is (9 * 0.5 + 4 * 0.5) / 13 = 0.5, so nothing changes; at a
  // corner the zero padding gives blur (4 * 0.5 + 4 * 0.5) / 13 = 4 / 13, sharpened by 1.9.
  const auto out = apply(AugmentOp::kSharpness, torch::full({1, 1, 4, 4}, 0.5f), 1.0f);
  EXPECT_NEAR(out[0][0][1][2].item<float>(), 0.5f, 1e-6);
  EXPECT_NEAR(out[0][0][0][0].item<float>(), 4.0f / 13 + (0.5f - 4.0f / 13) * 1.9f, 1e-6);
}

TEST(AugmentOps, TranslateMovesByWholePixels) {
  // Strength 1/9 of the 0.45 maximum on a 20-pixel side is exactly one pixel.
  const auto x = torch::rand({2, 3, 20, 20});
  const auto out = apply(AugmentOp::kTranslateX, x, 1.0f / 9.0f);
  EXPECT_TRUE(torch::allclose(out.slice(3, 0, 19), x.slice(3, 1, 20), 1e-5, 1e-5));
  EXPECT_TRUE(torch::equal(out.select(3, 19), torch::zeros({2, 3, 20})));
}

TEST(AugmentOps, ZeroStrengthGeometryIsIdentity) {
  const auto x = torch::rand({2, 1, 8, 8});
  for (auto op :
       {AugmentOp::kRotate, AugmentOp::kShearX, AugmentOp::kShearY, AugmentOp::kTranslateY}) {
    EXPECT_TRUE(torch::allclose(apply(op, x, 0.0f), x, 1e-5, 1e-6));
  }
}

TEST(RandAugment, ChangesPixelsKeepsRangeAndRepeatsWithTheSeed) {
  const auto x = torch::rand({16, 3, 8, 8});
  vit::data::Rng a(9), b(9);
  const auto out = vit::data::rand_augment(x, 2, 15.0, a);
  EXPECT_EQ(out.sizes(), x.sizes());
  EXPECT_FALSE(torch::allclose(out, x));
  EXPECT_GE(out.min().item<float>(), 0.0f);
  EXPECT_LE(out.max().item<float>(), 1.0f);
  EXPECT_TRUE(torch::equal(out, vit::data::rand_augment(x, 2, 15.0, b)));
}

}  // namespace
