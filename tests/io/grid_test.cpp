#include "vit/io/grid.hpp"

#include <string>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "picture_checks.hpp"

#include "vit/error.hpp"

namespace {

using vit::io::testing::rgb_at;

using torch::indexing::Slice;

at::Tensor solid(int64_t channels, int64_t side, std::vector<int64_t> value) {
  return torch::tensor(value, torch::kUInt8)
      .view({channels, 1, 1})
      .expand({channels, side, side})
      .contiguous();
}

// Pixels of `picture` inside the rows [top, bottom) and columns [left, right) that are not white.
int64_t ink(const at::Tensor& picture, int64_t top, int64_t bottom, int64_t left, int64_t right) {
  const at::Tensor box = picture.index({Slice(), Slice(top, bottom), Slice(left, right)});
  return (std::get<0>(box.min(0)) < 255).sum().item<int64_t>();
}

TEST(GridTest, LaysTilesOutInRowsWithMargins) {
  std::vector<vit::io::Tile> tiles;
  for (int i = 0; i < 5; ++i)
    tiles.push_back({solid(3, 32, {10, 200, 30}), ""});
  vit::io::GridOptions options;
  options.columns = 3;
  options.margin = 10;
  options.min_tile_side = 96;  // 32-pixel tiles are enlarged 3x
  const at::Tensor grid = vit::io::make_grid(tiles, options);
  // 10 + 3 * (96 + 10) wide; 2 rows of 96 + 10 (no captions) plus the top margin.
  ASSERT_EQ(grid.sizes(), (c10::IntArrayRef{3, 222, 328}));
  EXPECT_EQ(rgb_at(grid, 0, 0), (std::vector<int>{255, 255, 255}));
  EXPECT_EQ(rgb_at(grid, 116, 116), (std::vector<int>{10, 200, 30}));    // tile 4: row 1, column 1
  EXPECT_EQ(rgb_at(grid, 211, 211), (std::vector<int>{10, 200, 30}));    // its last pixel
  EXPECT_EQ(rgb_at(grid, 116, 222), (std::vector<int>{255, 255, 255}));  // no tile 5
}

TEST(GridTest, ShortCaptionsKeepTheCellWidth) {
  std::vector<vit::io::Tile> tiles = {{solid(1, 28, {0}), "cat"}, {solid(1, 28, {0}), "dog"}};
  vit::io::GridOptions options;
  options.columns = 2;
  options.margin = 10;
  options.min_tile_side = 96;  // 28 -> 4x = 112
  const at::Tensor grid = vit::io::make_grid(tiles, options);
  EXPECT_EQ(grid.size(2), 10 + 2 * (112 + 10));
  EXPECT_GT(ink(grid, 10 + 112, grid.size(1), 10, 122), 20);  // "cat" is drawn
}

TEST(GridTest, LongCaptionsWidenCellsAndStayInside) {
  const std::string long_name = "brown bear, bruin, Ursus arctos, a very long class name";
  std::vector<vit::io::Tile> tiles = {
      {solid(1, 28, {0}), long_name, {0, 0, 0}},
      {solid(3, 28, {0, 0, 255}), "cat / dog", {220, 0, 0}},
  };
  vit::io::GridOptions options;
  options.columns = 2;
  options.margin = 10;
  options.min_tile_side = 96;
  const at::Tensor grid = vit::io::make_grid(tiles, options);
  // The long name cannot fit 112 px in two legible lines, so cells grow to
  // 1.5 * 112 = 168 px, with the pictures centred: the first one at x = 38.
  ASSERT_EQ(grid.size(2), 10 + 2 * (168 + 10));
  EXPECT_EQ(rgb_at(grid, 10, 37), (std::vector<int>{255, 255, 255}));
  EXPECT_EQ(rgb_at(grid, 10, 38), (std::vector<int>{0, 0, 0}));
  const int64_t height = grid.size(1);
  const int64_t caption_top = 10 + 112;
  ASSERT_GT(height, caption_top + 10);  // room for captions
  // Caption ink lies under each tile and never in the margins between cells.
  EXPECT_GT(ink(grid, caption_top, height, 10, 178), 50);
  EXPECT_EQ(ink(grid, caption_top, height, 0, 10), 0);
  EXPECT_EQ(ink(grid, caption_top, height, 178, 188), 0);
  EXPECT_EQ(ink(grid, caption_top, height, 356, 366), 0);
  // The second caption is red.
  const at::Tensor band = grid.index({Slice(), Slice(caption_top, height), Slice(188, 356)});
  const at::Tensor red = (band[0] > 150) & (band[1] < 60) & (band[2] < 60);
  EXPECT_GT(red.sum().item<int64_t>(), 10);
}

TEST(GridTest, HandlesNoTilesAndRejectsBadOnes) {
  const at::Tensor empty = vit::io::make_grid({});
  EXPECT_EQ(empty.size(0), 3);
  EXPECT_EQ(empty.min().item<int>(), 255);
  try {
    vit::io::make_grid({{solid(3, 4, {0, 0, 0}), "a"}, {torch::zeros({3, 4, 4}), "b"}});
    ADD_FAILURE() << "float tile accepted";
  } catch (const vit::Error& e) {
    EXPECT_NE(std::string(e.what()).find("make_grid: tile 1: image is Float"), std::string::npos)
        << e.what();
  }
}

}  // namespace
