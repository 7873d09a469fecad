#include "vit/io/matrix_figure.hpp"

#include <cmath>
#include <string>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "picture_checks.hpp"

namespace {

using vit::io::testing::count_color;
using vit::io::testing::expect_error;
using vit::io::testing::kBluesEmpty;
using vit::io::testing::kBluesFull;
using vit::io::testing::kBluesThreeQuarters;

const std::vector<int> kMissing = {200, 200, 200};

TEST(MatrixFigureTest, CellsTakeTheirColourOnTheGivenScale) {
  // A 2 x 3 matrix on the scale -1..3: -1 is white, 2 is three quarters, 3 (and 5, beyond) full.
  const at::Tensor values = torch::tensor({-1.0, 2.0, 3.0, 5.0, -1.0, std::nan("")}).view({2, 3});
  vit::io::MatrixFigureOptions options;
  options.title = "a title";
  options.row_axis = "layer";
  options.column_axis = "head";
  options.low = -1;
  options.high = 3;
  const at::Tensor picture = vit::io::render_matrix(values, {"a", "b"}, {}, options);
  ASSERT_EQ(picture.size(0), 3);
  EXPECT_GT(picture.size(2), picture.size(1) / 2) << "wider than half its height: 3 columns";
  // 56-pixel cells: two full ones (3 and 5), one three-quarter, two white, one missing.
  EXPECT_GT(count_color(picture, kBluesFull), 2 * 56 * 56 / 2);
  EXPECT_GT(count_color(picture, kBluesThreeQuarters), 56 * 56 / 2);
  EXPECT_GT(count_color(picture, kBluesEmpty), 2 * 56 * 56 / 2);
  EXPECT_GE(count_color(picture, kMissing), 56 * 56);
}

TEST(MatrixFigureTest, RejectsBadInput) {
  vit::io::MatrixFigureOptions options;
  expect_error([&] { vit::io::render_matrix(torch::zeros({3}), {}, {}, options); },
               "expected a non-empty (R, C) matrix");
  expect_error(
      [&] {
        vit::io::render_matrix(torch::zeros({2, 3}), {"a"}, {}, options);
      },
      "1 row names for 2 rows");
  expect_error(
      [&] {
        vit::io::render_matrix(torch::zeros({2, 3}), {}, {"a", "b"}, options);
      },
      "2 column names for 3 columns");
  options.low = 1;
  options.high = 1;
  expect_error(
      [&] {
        vit::io::render_matrix(torch::zeros({2, 2}), {}, {}, options);
      },
      "expected low < high");
}

}  // namespace
