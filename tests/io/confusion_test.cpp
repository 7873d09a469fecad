#include "vit/io/confusion.hpp"

#include <string>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "picture_checks.hpp"

#include "vit/error.hpp"

namespace {

using vit::io::testing::count_color;
using vit::io::testing::expect_error;
using vit::io::testing::kBluesEmpty;
using vit::io::testing::kBluesFull;
using vit::io::testing::kBluesThreeQuarters;

TEST(ConfusionTest, CellsTakeTheColourOfTheirRowFraction) {
  // Row 0: 3 of 4 right (0.75), row 1: all right (1.0), cell (1, 0) empty.
  const at::Tensor counts = torch::tensor({3, 1, 0, 4}).view({2, 2});
  const at::Tensor picture = vit::io::render_confusion(counts, {"cat", "dog"});
  ASSERT_EQ(picture.size(0), 3);
  EXPECT_EQ(picture[0][0][0].item<int>(), 255);  // white background
  // Each 56-pixel cell keeps most of its pixels free of text.
  EXPECT_GT(count_color(picture, kBluesFull), 56 * 56 / 2);
  EXPECT_GT(count_color(picture, kBluesThreeQuarters), 56 * 56 / 2);
  EXPECT_GT(count_color(picture, kBluesEmpty), 56 * 56 / 2);
}

TEST(ConfusionTest, RawCountsScaleToTheLargestCell) {
  // Without normalising, 8 is the darkest cell and 6 sits at 0.75 of the scale.
  const at::Tensor counts = torch::tensor({8.0, 0.0, 2.0, 6.0}).view({2, 2});
  vit::io::ConfusionOptions options;
  options.normalize = false;
  const at::Tensor picture = vit::io::render_confusion(counts, {}, options);
  EXPECT_GT(count_color(picture, kBluesFull), 56 * 56 / 2);
  EXPECT_GT(count_color(picture, kBluesThreeQuarters), 56 * 56 / 2);
}

TEST(ConfusionTest, ManyClassesFitWithoutNames) {
  const at::Tensor counts = torch::eye(200, torch::kLong) * 5;
  std::vector<std::string> names;
  for (int i = 0; i < 200; ++i)
    names.push_back("class number " + std::to_string(i));
  const at::Tensor picture = vit::io::render_confusion(counts, names);
  // 3-pixel cells: the matrix is 600 px, and the picture stays under 1000 px.
  EXPECT_LT(picture.size(1), 1000);
  EXPECT_LT(picture.size(2), 1000);
  EXPECT_GE(count_color(picture, kBluesFull), 200 * 9);  // the diagonal
  // A single class and an all-zero matrix work too.
  EXPECT_NO_THROW(vit::io::render_confusion(torch::ones({1, 1}), {"only"}));
  EXPECT_NO_THROW(vit::io::render_confusion(torch::zeros({3, 3}), {}));
}

TEST(ConfusionTest, RejectsBadInput) {
  expect_error(
      [] {
        vit::io::render_confusion(torch::zeros({2, 3}), {});
      },
      "counts are [2, 3], expected a square (K, K) matrix");
  expect_error(
      [] {
        vit::io::render_confusion(torch::zeros({2, 2}), {"a", "b", "c"});
      },
      "3 class names for a 2 x 2 matrix, expected 2 (or none)");
  expect_error(
      [] {
        vit::io::render_confusion(-torch::ones({2, 2}), {});
      },
      "counts contain negative values");
}

}  // namespace
