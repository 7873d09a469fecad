// io/patch_outline: the patch's square ringed exactly 2 pixels wide, inside
// the patch, on the enlarged image; everything else the image's own pixels.
#include "vit/io/patch_outline.hpp"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "picture_checks.hpp"

namespace vit::io {
namespace {

using testing::rgb_at;

TEST(PatchOutline, RingsThePatchInsideItsSquareOnTheEnlargedImage) {
  // A gray 8x8 image, patches of 4: patch (1, 0) is rows 4..7, columns 0..3,
  // which at scale 2 (min_side 16) are rows 8..15, columns 0..7.
  const auto image = torch::full({1, 8, 8}, 100, torch::kUInt8);
  const auto picture = outlined_patch(image, 1, 0, 4, /*min_side=*/16, {255, 0, 0});
  ASSERT_EQ(picture.sizes(), (c10::IntArrayRef{3, 16, 16}));
  const std::vector<int> red = {255, 0, 0}, gray = {100, 100, 100};
  for (int64_t y = 0; y < 16; ++y) {
    for (int64_t x = 0; x < 16; ++x) {
      const bool in_patch = y >= 8 && x < 8;
      const bool on_ring = in_patch && (y < 10 || y >= 14 || x < 2 || x >= 6);
      EXPECT_EQ(rgb_at(picture, y, x), on_ring ? red : gray) << "pixel (" << y << ", " << x << ")";
    }
  }
  EXPECT_EQ(testing::count_color(picture, red), 8 * 8 - 4 * 4);
}

TEST(PatchOutline, KeepsTheColoursOfAnRgbImageAndItsSizeWhenLargeEnough) {
  auto image = torch::zeros({3, 4, 4}, torch::kUInt8);
  image[1].fill_(200);  // green
  const auto picture = outlined_patch(image, 1, 1, 2, /*min_side=*/4);
  ASSERT_EQ(picture.sizes(), (c10::IntArrayRef{3, 4, 4}));
  EXPECT_EQ(rgb_at(picture, 0, 0), (std::vector<int>{0, 200, 0}));
  EXPECT_EQ(rgb_at(picture, 3, 3), (std::vector<int>{255, 215, 0}));  // gold, the default
  EXPECT_EQ(rgb_at(picture, 2, 2), (std::vector<int>{255, 215, 0}));  // a 2-pixel patch is all ring
}

TEST(PatchOutline, APatchOutsideTheImageIsAnError) {
  const auto image = torch::zeros({1, 8, 8}, torch::kUInt8);
  testing::expect_error([&] { outlined_patch(image, 2, 0, 4); },
                        "patch (2, 0) of side 4 is outside a 8x8 image");
  testing::expect_error([&] { outlined_patch(image, 0, -1, 4); }, "outside");
  testing::expect_error([&] { outlined_patch(image, 0, 0, 0); }, "outside");
}

}  // namespace
}  // namespace vit::io
