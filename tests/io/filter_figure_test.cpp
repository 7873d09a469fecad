#include "vit/io/filter_figure.hpp"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "picture_checks.hpp"

namespace vit::io {
namespace {

// (C, P, P) = (2, 2, 2), flattened channel first: the minimum goes to 0, the
// maximum to 255, the rest in proportion.
TEST(FilterFigure, TileIsStretchedToItsOwnRangeChannelFirst) {
  const auto component = torch::tensor({-1.0, 0.0, 1.0, 3.0, 3.0, 3.0, 3.0, -1.0});
  const auto tile = filter_tile(component, /*channels=*/2, /*patch_size=*/2);
  ASSERT_EQ(tile.sizes(), (std::vector<int64_t>{2, 2, 2}));
  EXPECT_EQ(tile.scalar_type(), torch::kUInt8);
  EXPECT_EQ(tile[0][0][0].item<int>(), 0);
  EXPECT_EQ(tile[0][0][1].item<int>(), 64);   // 1/4 of the way: round(63.75)
  EXPECT_EQ(tile[0][1][0].item<int>(), 128);  // round(127.5)
  EXPECT_EQ(tile[1][0][0].item<int>(), 255);
  EXPECT_EQ(tile[1][1][1].item<int>(), 0);
}

TEST(FilterFigure, ConstantTileIsMidGray) {
  const auto tile = filter_tile(torch::full({9}, 0.5), 1, 3);
  EXPECT_TRUE(torch::equal(tile, torch::full({1, 3, 3}, 128, torch::kUInt8)));
}

TEST(FilterFigure, DrawsEveryComponentWithCaptions) {
  torch::manual_seed(0);
  const auto picture = render_filters(torch::randn({10, 3 * 4 * 4}), torch::full({10}, 0.1), 3, 4);
  ASSERT_EQ(picture.size(0), 3);
  EXPECT_GT(picture.size(2), 7 * 72);  // 7 columns of tiles at least 72 px wide
  EXPECT_GT(picture.size(1), 2 * 72);  // two rows
}

TEST(FilterFigure, MismatchedShapesAreClearErrors) {
  testing::expect_error(
      [] {
        render_filters(torch::zeros({4, 10}), torch::zeros({4}), 1, 3);
      },
      "render_filters: components [4, 10] and ratios [4]; expected (k, 9) and "
      "(k) for 1 channels of 3x3");
}

}  // namespace
}  // namespace vit::io
