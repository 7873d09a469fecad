#include "vit/io/heatmap.hpp"

#include <string>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "picture_checks.hpp"

#include "vit/error.hpp"

namespace {

using vit::io::testing::rgb_at;

// OpenCV's COLORMAP_JET ends: 0 -> BGR (128, 0, 0), 255 -> BGR (0, 0, 128).
const std::vector<int> kJetLow = {0, 0, 128};
const std::vector<int> kJetHigh = {128, 0, 0};

TEST(HeatmapTest, ScaleBringsSmallImagesToAtLeast128Pixels) {
  EXPECT_EQ(vit::io::display_scale(32, 32), 4);
  EXPECT_EQ(vit::io::display_scale(28, 28), 5);  // 4 * 28 = 112 would be too small
  EXPECT_EQ(vit::io::display_scale(64, 32), 4);  // the shorter side decides
  EXPECT_EQ(vit::io::display_scale(100, 100), 2);
  EXPECT_EQ(vit::io::display_scale(224, 224), 1);
  EXPECT_EQ(vit::io::display_scale(0, 0), 1);
}

TEST(HeatmapTest, MaskEndsGiveJetEndColours) {
  const at::Tensor black = torch::zeros({3, 32, 32}, torch::kUInt8);
  const at::Tensor low = vit::io::heatmap_overlay(black, torch::zeros({4, 4}), /*alpha=*/1.0);
  ASSERT_EQ(low.sizes(), (c10::IntArrayRef{3, 128, 128}));
  EXPECT_EQ(rgb_at(low, 0, 0), kJetLow);
  EXPECT_EQ(rgb_at(low, 127, 64), kJetLow);
  const at::Tensor high = vit::io::heatmap_overlay(black, torch::ones({4, 4}), /*alpha=*/1.0);
  EXPECT_EQ(rgb_at(high, 64, 127), kJetHigh);
}

TEST(HeatmapTest, BlendsHalfAndHalfOverGrayImages) {
  const at::Tensor white = torch::full({1, 28, 28}, 255, torch::kUInt8);
  const at::Tensor picture = vit::io::heatmap_overlay(white, torch::ones({7, 7}), /*alpha=*/0.5);
  ASSERT_EQ(picture.sizes(), (c10::IntArrayRef{3, 140, 140}));
  // 0.5 * 255 + 0.5 * 128 = 191.5 -> 192; 0.5 * 255 = 127.5 -> 128 (round half to even).
  EXPECT_EQ(rgb_at(picture, 70, 70), (std::vector<int>{192, 128, 128}));
}

TEST(HeatmapTest, MaskIsUpsampledSmoothlyAcrossTheImage) {
  // Left column hot, right column cold: the ends keep the JET end colours and
  // the middle passes through green (JET(128) = RGB (130, 255, 126)).
  const at::Tensor mask = torch::tensor({1.0f, 0.0f, 1.0f, 0.0f}).view({2, 2});
  const at::Tensor picture =
      vit::io::heatmap_overlay(torch::zeros({3, 32, 32}, torch::kUInt8), mask, 1.0);
  EXPECT_EQ(rgb_at(picture, 10, 0), kJetHigh);
  EXPECT_EQ(rgb_at(picture, 10, 127), kJetLow);
  const std::vector<int> middle = rgb_at(picture, 10, 64);
  EXPECT_GT(middle[1], 200) << "G of the centre pixel";
}

TEST(HeatmapTest, BesidePutsOriginalLeftAndOverlayRight) {
  at::Tensor image = torch::zeros({3, 32, 32}, torch::kUInt8);
  image.index_put_({torch::indexing::Slice(), 1, 1}, torch::tensor({10, 20, 30}, torch::kUInt8));
  const at::Tensor picture =
      vit::io::heatmap_beside(image, torch::zeros({4, 4}), /*alpha=*/1.0, /*min_side=*/128,
                              /*gap=*/8);
  ASSERT_EQ(picture.sizes(), (c10::IntArrayRef{3, 128, 2 * 128 + 8}));
  // Pixel (1, 1) became the 4x4 block at rows/columns 4..7, without blending.
  EXPECT_EQ(rgb_at(picture, 4, 4), (std::vector<int>{10, 20, 30}));
  EXPECT_EQ(rgb_at(picture, 7, 7), (std::vector<int>{10, 20, 30}));
  EXPECT_EQ(rgb_at(picture, 8, 8), (std::vector<int>{0, 0, 0}));
  EXPECT_EQ(rgb_at(picture, 0, 130), (std::vector<int>{255, 255, 255}));  // the gap
  EXPECT_EQ(rgb_at(picture, 5, 128 + 8 + 5), kJetLow);
}

TEST(HeatmapTest, RejectsBadMasksAndAlpha) {
  const at::Tensor image = torch::zeros({3, 8, 8}, torch::kUInt8);
  try {
    vit::io::heatmap_overlay(image, torch::zeros({16}));
    ADD_FAILURE() << "1-D mask accepted";
  } catch (const vit::Error& e) {
    EXPECT_NE(std::string(e.what()).find("mask is [16], expected a 2-D (g, g) map"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(vit::io::heatmap_overlay(image, torch::zeros({2, 2}), /*alpha=*/1.5), vit::Error);
  EXPECT_THROW(vit::io::heatmap_overlay(torch::zeros({3, 8, 8}), torch::zeros({2, 2})),
               vit::Error);  // float image
  // NaN in a mask reads as 0, not as a crash or garbage colour.
  const at::Tensor picture =
      vit::io::heatmap_overlay(image, torch::full({2, 2}, NAN), /*alpha=*/1.0);
  EXPECT_EQ(rgb_at(picture, 0, 0), kJetLow);
}

}  // namespace
