#include "vit/data/random_erasing.hpp"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "error_of.hpp"

namespace {

using vit::data::random_erasing;
using vit::data::Rng;

// The box of image i that erasing changed, as (rows, columns) counts.
std::pair<int64_t, int64_t> erased_box(const at::Tensor& before, const at::Tensor& after) {
  const auto changed = before.ne(after).any(/*dim=*/0);  // (H, W)
  return {changed.any(1).sum().item<int64_t>(), changed.any(0).sum().item<int64_t>()};
}

TEST(RandomErasing, EveryImageGetsOneBoxOfNoiseOfTheAllowedSize) {
  const auto images = torch::zeros({64, 3, 32, 32});
  Rng rng(4);
  const auto erased = random_erasing(images, /*probability=*/1.0, rng);
  for (int64_t i = 0; i < 64; ++i) {
    const auto [rows, cols] = erased_box(images[i], erased[i]);
    const int64_t changed = erased[i].ne(0).any(0).sum().item<int64_t>();
    ASSERT_GT(rows, 0) << i;
    EXPECT_EQ(changed, rows * cols) << i;  // one rectangle
    const double share = double(rows * cols) / (32.0 * 32.0);
    EXPECT_GE(share, 0.015) << i;  // 2% to 1/3, less the sides' rounding
    EXPECT_LE(share, 0.36) << i;
    EXPECT_LT(rows, 32);
    EXPECT_LT(cols, 32);
  }
  // Standard-normal noise.
  const auto values = erased.masked_select(erased.ne(0));
  EXPECT_NEAR(values.mean().item<double>(), 0.0, 0.05);
  EXPECT_NEAR(values.std().item<double>(), 1.0, 0.05);
}

TEST(RandomErasing, ProbabilityFollowsTheSeedAndTheRanksSplitTheDraws) {
  const auto images = torch::rand({40, 3, 16, 16});
  Rng none(1);
  EXPECT_TRUE(torch::equal(random_erasing(images, 0.0, none), images));
  Rng a(9), b(9);
  const auto once = random_erasing(images, 0.5, a), again = random_erasing(images, 0.5, b);
  EXPECT_TRUE(torch::equal(once, again));
  const int64_t erased = once.ne(images).flatten(1).any(1).sum().item<int64_t>();
  EXPECT_GT(erased, 10);  // 20 expected of 40
  EXPECT_LT(erased, 30);
  // Two ranks' halves of the global batch, erased apart, are the whole one.
  Rng r0(9), r1(9);
  const auto first = random_erasing(images.slice(0, 0, 20), 0.5, r0, /*first_row=*/0, 40);
  const auto second = random_erasing(images.slice(0, 20, 40), 0.5, r1, /*first_row=*/20, 40);
  EXPECT_TRUE(torch::equal(torch::cat({first, second}), once));
}

TEST(RandomErasing, RefusesUnnormalisedPixels) {
  Rng rng(1);
  EXPECT_EQ(vit::testing::error_of([&] {
              random_erasing(torch::zeros({1, 3, 4, 4}, torch::kUInt8), 0.5, rng);
            }),
            "random_erasing: expected normalised float (B, C, H, W) images");
}

}  // namespace
