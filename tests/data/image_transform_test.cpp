#include "vit/data/image_transform.hpp"

#include <cmath>

#include <gtest/gtest.h>

namespace {

using vit::RandomResizedCrop;
using vit::data::center_crop_plan;
using vit::data::random_resized_crop_box;
using vit::data::Rng;

TEST(RandomResizedCrop, EveryBoxFitsAndFollowsTheSeed) {
  const RandomResizedCrop crop;
  Rng a(7), b(7);
  for (int i = 0; i < 2000; ++i) {
    const auto box = random_resized_crop_box(375, 500, crop, a);
    ASSERT_GE(box.top, 0);
    ASSERT_GE(box.left, 0);
    ASSERT_GT(box.height, 0);
    ASSERT_GT(box.width, 0);
    ASSERT_LE(box.top + box.height, 375);
    ASSERT_LE(box.left + box.width, 500);
    const auto again = random_resized_crop_box(375, 500, crop, b);
    ASSERT_EQ(box.top, again.top);
    ASSERT_EQ(box.width, again.width);
  }
}

// Within the ranges a box fits in, the draws are torchvision's: the area
// share uniform in scale, the log ratio uniform in log ratio. On a large
// square image every first try fits when the ratio stays near 1, so the
// moments are the uniform draws' own (tests/pycheck/check_crops.py compares
// the whole distributions with torchvision's, on images where tries fail).
TEST(RandomResizedCrop, AreaAndRatioMomentsAreTheUniformDraws) {
  RandomResizedCrop crop;
  crop.scale = {0.25, 0.75};
  crop.ratio = {0.8, 1.25};
  Rng rng(3);
  const int n = 20000;
  double area = 0, log_ratio = 0, log_ratio2 = 0;
  for (int i = 0; i < n; ++i) {
    const auto box = random_resized_crop_box(2000, 2000, crop, rng);
    area += double(box.height * box.width) / (2000.0 * 2000.0);
    const double r = std::log(double(box.width) / double(box.height));
    log_ratio += r;
    log_ratio2 += r * r;
  }
  area /= n;
  log_ratio /= n;
  const double half = std::log(1.25);  // log ratio uniform in [-half, half]
  EXPECT_NEAR(area, 0.5, 0.005);       // the standard error is 0.001
  EXPECT_NEAR(log_ratio, 0.0, 0.003);
  EXPECT_NEAR(log_ratio2 / n, half * half / 3, 0.002);
}

TEST(RandomResizedCrop, TenMissesFallBackToTheCentredCropAtTheNearestRatio) {
  RandomResizedCrop crop;
  crop.scale = {0.99, 1.0};  // nearly the whole area: a 1000 x 10 strip never fits a 4:3 box
  Rng rng(1);
  const auto wide = random_resized_crop_box(/*height=*/10, /*width=*/1000, crop, rng);
  EXPECT_EQ(wide.height, 10);
  EXPECT_EQ(wide.width, 13);  // round(10 * 4/3)
  EXPECT_EQ(wide.top, 0);
  EXPECT_EQ(wide.left, (1000 - 13) / 2);
  const auto tall = random_resized_crop_box(1000, 10, crop, rng);
  EXPECT_EQ(tall.width, 10);
  EXPECT_EQ(tall.height, 13);  // round(10 / 0.75)
  EXPECT_EQ(tall.top, (1000 - 13) / 2);
}

TEST(CenterCropPlan, IsTimmsResizeThenCentreCrop) {
  // 375 x 500 at 224, crop_pct 0.875: shorter side to 256, longer to
  // int(256 * 500 / 375) = 341, then the centre 224: top round(16) = 16,
  // left round(58.5) = 58 (half to even, as Python's round).
  const auto p = center_crop_plan(375, 500, 224, 0.875);
  EXPECT_EQ(p.height, 375);
  EXPECT_EQ(p.width, 500);
  EXPECT_EQ(p.out_height, 256);
  EXPECT_EQ(p.out_width, 341);
  EXPECT_EQ(p.crop_top, 16);
  EXPECT_EQ(p.crop_left, 58);
  EXPECT_EQ(p.crop_height, 224);
  EXPECT_EQ(p.crop_width, 224);
  const auto tall = center_crop_plan(640, 427, 224, 0.9);  // floor(224 / 0.9) = 248
  EXPECT_EQ(tall.out_width, 248);
  EXPECT_EQ(tall.out_height, 371);  // int(248 * 640 / 427) = int(371.71)
  EXPECT_EQ(tall.crop_top, 74);     // round(73.5) = 74, the even neighbour
  EXPECT_EQ(tall.crop_left, 12);
  const auto whole = center_crop_plan(224, 224, 224, 1.0);
  EXPECT_EQ(whole.out_height, 224);
  EXPECT_EQ(whole.crop_top, 0);
}

TEST(SquashPlan, IsTimmsSquashBothSidesThenCentreCrop) {
  // crop_pct 0.875 at 224: both sides to floor(256), then the centre 224 from
  // round(16) = 16. At crop_pct 1: the whole image to 224 x 224, no window.
  const auto p = vit::data::squash_plan(375, 500, 224, 0.875);
  EXPECT_EQ(p.out_height, 256);
  EXPECT_EQ(p.out_width, 256);
  EXPECT_EQ(p.crop_top, 16);
  EXPECT_EQ(p.crop_left, 16);
  EXPECT_EQ(p.crop_height, 224);
  const auto whole = vit::data::squash_plan(375, 500, 224);
  EXPECT_EQ(whole.out_height, 224);
  EXPECT_EQ(whole.out_width, 224);
  EXPECT_EQ(whole.crop_height, 0);  // all of it
}

// data.crop_mode auto: center with a random resized crop, else the whole image
// squashed, which the in-memory path already holds; anything else needs the
// original images.
TEST(EvaluationTransform, AutoFollowsTheRandomResizedCropAndTheRestIsExplicit) {
  vit::DataConfig d;
  d.crop_pct = 0.9;
  auto t = vit::evaluation_transform(d);
  EXPECT_EQ(t.mode, vit::CropMode::kSquash);
  EXPECT_EQ(t.crop_pct, 1.0);
  EXPECT_FALSE(vit::data::needs_original_images(t));
  d.augment.random_resized_crop = vit::RandomResizedCrop{};
  t = vit::evaluation_transform(d);
  EXPECT_EQ(t.mode, vit::CropMode::kCenter);
  EXPECT_EQ(t.crop_pct, 0.9);
  EXPECT_TRUE(vit::data::needs_original_images(t));
  d.augment.random_resized_crop.reset();
  d.crop_mode = vit::CropMode::kSquash;
  EXPECT_TRUE(vit::data::needs_original_images(vit::evaluation_transform(d)));  // crop_pct 0.9
  d.crop_pct = 1.0;
  EXPECT_FALSE(vit::data::needs_original_images(vit::evaluation_transform(d)));
  d.interpolation = vit::Interpolation::kBicubic;
  t = vit::evaluation_transform(d);
  EXPECT_TRUE(vit::data::needs_original_images(t));
  const auto plan = vit::data::evaluation_plan(t, 300, 400, 224);
  EXPECT_EQ(plan.interpolation, vit::Interpolation::kBicubic);
  EXPECT_EQ(plan.out_height, 224);
}

}  // namespace
