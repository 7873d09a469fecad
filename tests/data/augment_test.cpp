#include "vit/data/augment.hpp"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "vit/error.hpp"

using vit::PaddingMode;
using vit::data::Rng;

namespace {

at::Tensor ramp_batch(int64_t b, int64_t c, int64_t h, int64_t w) {
  return torch::arange(b * c * h * w, torch::kInt64)
      .remainder(251)
      .add(1)
      .to(torch::kUInt8)
      .view({b, c, h, w});
}

// True when `out` equals one of the (2p+1)^2 windows of `padded` (optionally flipped).
bool is_a_window(const at::Tensor& out, const at::Tensor& padded, int64_t p, bool allow_flip) {
  const int64_t h = out.size(1), w = out.size(2);
  for (int64_t y = 0; y <= 2 * p; ++y) {
    for (int64_t x = 0; x <= 2 * p; ++x) {
      const auto window = padded.slice(1, y, y + h).slice(2, x, x + w);
      if (torch::equal(out, window)) return true;
      if (allow_flip && torch::equal(out, window.flip(2))) return true;
    }
  }
  return false;
}

TEST(RandomCropFlip, IsIdentityWhenOff) {
  const auto images = ramp_batch(4, 3, 8, 8);
  Rng rng(0);
  EXPECT_TRUE(torch::equal(vit::data::random_crop_flip(images, 0, PaddingMode::kZeros, false, rng),
                           images));
}

TEST(RandomCropFlip, ZeroPaddingCropsMatchTorchPadding) {
  const auto images = ramp_batch(32, 2, 5, 6);
  Rng rng(1);
  const auto out = vit::data::random_crop_flip(images, 2, PaddingMode::kZeros, /*hflip=*/true, rng);
  EXPECT_EQ(out.sizes(), images.sizes());
  EXPECT_EQ(out.scalar_type(), torch::kUInt8);
  EXPECT_FALSE(torch::equal(out, images));
  const auto padded = torch::constant_pad_nd(images, {2, 2, 2, 2}, 0);
  int flipped = 0;
  for (int64_t i = 0; i < 32; ++i) {
    EXPECT_TRUE(is_a_window(out[i], padded[i], 2, true)) << "image " << i;
    flipped += !is_a_window(out[i], padded[i], 2, false);
  }
  EXPECT_GT(flipped, 4);
  EXPECT_LT(flipped, 28);
}

TEST(RandomCropFlip, ReflectPaddingMatchesTorchReflection) {
  const auto images = ramp_batch(16, 1, 6, 6);
  Rng rng(2);
  const auto out =
      vit::data::random_crop_flip(images, 3, PaddingMode::kReflect, /*hflip=*/false, rng);
  const auto padded =
      torch::reflection_pad2d(images.to(torch::kFloat32), {3, 3, 3, 3}).to(torch::kUInt8);
  for (int64_t i = 0; i < 16; ++i)
    EXPECT_TRUE(is_a_window(out[i], padded[i], 3, false)) << i;
  EXPECT_EQ((out == 0).sum().item<int64_t>(), 0);  // reflection never brings in zeros
  Rng again(2);
  EXPECT_TRUE(torch::equal(
      out, vit::data::random_crop_flip(images, 3, PaddingMode::kReflect, false, again)));
}

TEST(RandomCropFlip, RejectsBadSettings) {
  Rng rng(0);
  try {
    vit::data::random_crop_flip(ramp_batch(1, 1, 4, 4), 4, PaddingMode::kReflect, false, rng);
    FAIL() << "no error";
  } catch (const vit::Error& e) {
    EXPECT_STREQ(
        e.what(),
        "data.augment.crop_padding: reflect padding 4 must be smaller than the image side 4");
  }
}

TEST(AugmentBatch, FollowsTheConfig) {
  const auto images = ramp_batch(8, 3, 8, 8);
  const auto labels = torch::arange(8, torch::kInt64).remainder(4);
  vit::AugmentConfig off;
  off.crop_padding = 0;
  off.hflip = false;
  Rng rng(4);
  auto same = vit::data::augment_batch(images, labels, 4, off, rng);
  EXPECT_TRUE(torch::equal(same.images, images));
  EXPECT_FALSE(same.targets.defined());

  vit::AugmentConfig all;
  all.randaugment_ops = 2;
  all.mixup_alpha = 0.8;
  auto mixed = vit::data::augment_batch(images, labels, 4, all, rng);
  EXPECT_EQ(mixed.images.sizes(), images.sizes());
  EXPECT_EQ(mixed.images.scalar_type(), torch::kFloat32);
  EXPECT_GE(mixed.images.min().item<float>(), 0.0f);
  EXPECT_LE(mixed.images.max().item<float>(), 1.0f);
  ASSERT_EQ(mixed.targets.sizes(), (std::vector<int64_t>{8, 4}));
  EXPECT_TRUE(torch::allclose(mixed.targets.sum(1), torch::ones({8})));
}

}  // namespace
