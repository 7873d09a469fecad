#include "vit/weights/pos_embed_resize.hpp"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "error_of.hpp"

namespace vit {
namespace {

using testing::error_of;

// PyTorch's bicubic kernel (A = -0.75, align_corners = false, edge samples
// clamped) taking 2 samples to 4, worked by hand: output i reads source
// x = (i + 0.5) / 2 - 0.5 = -0.25, 0.25, 0.75, 1.25. At x = 0.25 (t = 0.25),
// the taps -1, 0, 1, 2 (clamped to 0, 0, 1, 1) weigh -0.10546875,
// 0.87890625, 0.26171875, -0.03515625, so sample 0 gets 0.7734375.
constexpr double kTwoToFour[4][2] = {{1.10546875, -0.10546875},
                                     {0.7734375, 0.2265625},
                                     {0.2265625, 0.7734375},
                                     {-0.10546875, 1.10546875}};

torch::Tensor weights_2_to_4() {
  auto w = torch::empty({4, 2}, torch::kDouble);
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 2; ++j)
      w[i][j] = kTwoToFour[i][j];
  return w;
}

// A (1, 1 + 4, 2) embedding: class token (7, -7); channel 0 is 1 on patch
// (0, 0) only, channel 1 is the patch's column index.
torch::Tensor two_by_two() {
  return torch::tensor({7.0, -7.0, 1.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0}, torch::kDouble)
      .reshape({1, 5, 2});
}

TEST(ResizePosEmbed, SameGridIsTheIdentity) {
  torch::manual_seed(0);
  const auto pos = torch::randn({1, 1 + 7 * 7, 12});
  const auto same = resize_pos_embed(pos, 7);
  EXPECT_TRUE(torch::equal(same, pos));
  EXPECT_NE(same.data_ptr(), pos.data_ptr());  // a copy, not a view the caller might overwrite
}

TEST(ResizePosEmbed, TwoByTwoToFourByFourMatchesTheHandWorkedBicubicWeights) {
  const auto resized = resize_pos_embed(two_by_two(), 4);
  ASSERT_EQ(resized.sizes(), (std::vector<int64_t>{1, 17, 2}));
  EXPECT_EQ(resized[0][0][0].item<double>(), 7.0);  // class token kept
  EXPECT_EQ(resized[0][0][1].item<double>(), -7.0);
  const auto w = weights_2_to_4();
  const auto grid = resized.slice(1, 1).reshape({4, 4, 2});  // (row, column, channel)
  // A separable kernel: a one-hot corner becomes the outer product of its column of weights.
  const auto corner = torch::outer(w.select(1, 0), w.select(1, 0));  // (4, 4)
  EXPECT_TRUE(torch::allclose(grid.select(2, 0), corner, /*rtol=*/0, /*atol=*/1e-12))
      << grid.select(2, 0) << "\nexpected\n"
      << corner;
  EXPECT_NEAR(grid[0][0][0].item<double>(), 1.10546875 * 1.10546875, 1e-12);
  // Columns 0, 1 -> -0.10546875, 0.2265625, 0.7734375, 1.10546875 in every row.
  const auto columns = w.select(1, 1).expand({4, 4});
  EXPECT_TRUE(torch::allclose(grid.select(2, 1), columns, 0, 1e-12)) << grid.select(2, 1);
}

TEST(ResizePosEmbed, ShrinkingKeepsTheClassTokenAndTheDtype) {
  torch::manual_seed(1);
  const auto pos = torch::randn({1, 1 + 8 * 8, 4}).to(torch::kBFloat16);
  const auto resized = resize_pos_embed(pos, 3);
  EXPECT_EQ(resized.sizes(), (std::vector<int64_t>{1, 10, 4}));
  EXPECT_EQ(resized.scalar_type(), torch::kBFloat16);
  EXPECT_TRUE(torch::equal(resized.slice(1, 0, 1), pos.slice(1, 0, 1)));
}

TEST(ResizePosEmbed, AConstantGridStaysConstant) {
  // Bicubic weights sum to 1, so a constant image resizes to the same constant.
  auto pos = torch::full({1, 1 + 3 * 3, 5}, 0.25);
  const auto resized = resize_pos_embed(pos, 7);
  EXPECT_TRUE(torch::allclose(resized.slice(1, 1), torch::full({1, 49, 5}, 0.25), 0, 1e-6));
}

TEST(ResizePosEmbed, RejectsShapesThatAreNotAClassTokenAndASquareGrid) {
  EXPECT_EQ(error_of([] {
              resize_pos_embed(torch::zeros({1, 11, 4}), 4);
            }),
            "pos_embed: shape [1, 11, 4] has 10 patch tokens after the class token, which is not "
            "a square grid g*g");
  EXPECT_EQ(error_of([] {
              resize_pos_embed(torch::zeros({2, 5, 4}), 4);
            }),
            "pos_embed: shape [2, 5, 4], expected [1, 1 + g*g, D] (the class token, then a g x g "
            "grid of patches)");
  EXPECT_EQ(error_of([] {
              resize_pos_embed(torch::zeros({5, 4}), 4);
            }),
            "pos_embed: shape [5, 4], expected [1, 1 + g*g, D] (the class token, then a g x g "
            "grid of patches)");
  EXPECT_EQ(error_of([] {
              resize_pos_embed(torch::zeros({1, 5, 4}), 0);
            }),
            "pos_embed resize: new grid side 0, expected >= 1");
}

TEST(PosEmbedGrid, ReadsTheGridSide) {
  EXPECT_EQ(pos_embed_grid(torch::zeros({1, 1 + 14 * 14, 3})), 14);
  EXPECT_EQ(pos_embed_grid(torch::zeros({1, 2, 3})), 1);
}

}  // namespace
}  // namespace vit
