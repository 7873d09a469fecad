#include "vit/analysis/attention_distance.hpp"

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "error_of.hpp"
#include "tensor_values.hpp"
#include "vit/error.hpp"
#include "vit/model/vision_transformer.hpp"

namespace vit {
// Named, not anonymous: the unity build compiles this file with others that
// have helpers of the same names.
namespace attention_distance_test {

constexpr double kTol = 1e-4;
const double kSqrt2 = std::sqrt(2.0);

using testing::values;

bool near(const torch::Tensor& actual, const torch::Tensor& expected, double tol = kTol) {
  return testing::near(actual, expected, tol);
}

void expect_throws_with(const std::function<void()>& call, const std::string& fragment) {
  EXPECT_TRUE(testing::throws_error_containing(call, fragment));
}

// One head's (N,N) attention where patch query q attends with weight 1 to patch
// target[q] (-1: to the class token). The class token attends to itself.
torch::Tensor one_hot_attention(const std::vector<int64_t>& target) {
  const auto tokens = static_cast<int64_t>(target.size()) + 1;
  auto attention = torch::zeros({tokens, tokens});
  attention[0][0] = 1.0;
  for (size_t q = 0; q < target.size(); ++q)
    attention[q + 1][target[q] + 1] = 1.0;
  return attention;
}

// 2x2 grid, patch 16: every patch sees two neighbours at 16 px and one at 16*sqrt(2).
TEST(AttentionDistance, DistanceMatrixOfTwoByTwoGrid) {
  const double d = 16 * kSqrt2;
  EXPECT_TRUE(near(patch_distance_matrix(/*grid=*/2, /*patch_size=*/16),
                   values({0, 16, 16, d, 16, 0, d, 16, 16, d, 0, 16, d, 16, 16, 0}, {4, 4}), 1e-5));
  // 3x3 grid, patch 1: from the top-left cell to (2,1) is sqrt(5).
  EXPECT_NEAR(patch_distance_matrix(3, 1, torch::kDouble)[0][7].item<double>(), std::sqrt(5.0),
              1e-12);
}

// Uniform 0.2 over the 5 tokens: each query row sums 0.2 * (0 + 16 + 16 + 16 sqrt 2)
// = 6.4 + 3.2 sqrt 2 = 10.9255 (the same for every query, so also the mean).
// Renormalised, the four patch weights become 0.25: 8 + 4 sqrt 2 = 13.6569.
TEST(AttentionDistance, UniformAttentionOnTwoByTwoGrid) {
  const std::vector<torch::Tensor> attentions = {torch::full({1, 1, 5, 5}, 0.2)};
  const auto plain = mean_attention_distance(attentions, /*patch_size=*/16);
  EXPECT_EQ(plain.scalar_type(), torch::kFloat);
  EXPECT_TRUE(near(plain, values({10.9255}, {1, 1, 1}))) << plain;
  EXPECT_TRUE(near(plain, values({6.4 + 3.2 * kSqrt2}, {1, 1, 1}), 1e-5));
  const auto renormalized = mean_attention_distance(attentions, 16, /*renormalize=*/true);
  EXPECT_TRUE(near(renormalized, values({13.6569}, {1, 1, 1}))) << renormalized;
  EXPECT_TRUE(near(renormalized, values({8 + 4 * kSqrt2}, {1, 1, 1}), 1e-5));
}

// Each patch attends only to itself: every weighted distance is D[q,q] = 0.
TEST(AttentionDistance, IdentityAttentionIsZero) {
  const std::vector<torch::Tensor> attentions(3, torch::eye(17).expand({2, 4, 17, 17}));
  for (bool renormalize : {false, true}) {
    const auto distance = mean_attention_distance(attentions, /*patch_size=*/8, renormalize);
    EXPECT_TRUE(near(distance, torch::zeros({2, 3, 4}, torch::kDouble), 0.0)) << distance;
  }
}

// On a 2x2 grid every patch is a corner: each query attending only to the opposite
// corner is at patch * (g-1) * sqrt 2 = 16 sqrt 2, so that is also the mean.
TEST(AttentionDistance, EveryQueryAtTheFarCorner) {
  const auto attention = one_hot_attention({3, 2, 1, 0}).view({1, 1, 5, 5});
  EXPECT_TRUE(near(mean_attention_distance({attention}, 16), values({16 * kSqrt2}, {1, 1, 1})));
}

// 4x4 grid, patch 8: only the top-left query attends to a patch, the far corner
// (3,3), at 8 * 3 * sqrt 2; the other 15 queries attend to the class token, which is
// dropped and not renormalised, so they add 0 and the mean over 16 queries is
// 8 * 3 * sqrt 2 / 16. Renormalising cannot rescue a row with no patch weight: same.
TEST(AttentionDistance, OneQueryAtTheFarCorner) {
  std::vector<int64_t> target(16, -1);
  target[0] = 15;
  const auto attention = one_hot_attention(target).view({1, 1, 17, 17});
  const double corner = 8 * 3 * kSqrt2;
  for (bool renormalize : {false, true}) {
    const auto distance = mean_attention_distance({attention}, /*patch_size=*/8, renormalize);
    EXPECT_TRUE(near(distance, values({corner / 16}, {1, 1, 1}))) << distance;
  }
  // bf16 input (one-hot is exact) is computed in float32.
  const auto low = mean_attention_distance({attention.to(torch::kBFloat16)}, 8);
  EXPECT_EQ(low.scalar_type(), torch::kFloat);
  EXPECT_TRUE(near(low, values({corner / 16}, {1, 1, 1})));
}

// Layout (B,L,H): layer 0 = [uniform, identity], layer 1 = [far corner, uniform];
// image 2 has every head's attention on the identity.
TEST(AttentionDistance, PerImageLayerHeadLayoutAndAverage) {
  const auto uniform = torch::full({5, 5}, 0.2);
  const auto identity = torch::eye(5);
  const auto corner = one_hot_attention({3, 2, 1, 0});
  const auto image1_l0 = torch::stack({uniform, identity});  // (H, N, N)
  const auto image1_l1 = torch::stack({corner, uniform});
  const auto image2 = torch::stack({identity, identity});
  const std::vector<torch::Tensor> attentions = {torch::stack({image1_l0, image2}),
                                                 torch::stack({image1_l1, image2})};
  const double u = 6.4 + 3.2 * kSqrt2, c = 16 * kSqrt2;
  const auto distance = mean_attention_distance(attentions, 16);
  EXPECT_TRUE(near(distance, values({u, 0, c, u, 0, 0, 0, 0}, {2, 2, 2}))) << distance;
  EXPECT_TRUE(near(average_over_images(distance), values({u / 2, 0, c / 2, u / 2}, {2, 2})));
}

// Three images in two batches: uniform (6.4 + 3.2 sqrt 2), then identity (0) and far
// corner (16 sqrt 2); the running mean is (6.4 + 19.2 sqrt 2) / 3 = 11.1843.
TEST(AttentionDistance, AccumulatorAveragesOverBatches) {
  AttentionDistanceAccumulator accumulator(/*patch_size=*/16);
  EXPECT_EQ(accumulator.images(), 0);
  accumulator.add({torch::full({1, 1, 5, 5}, 0.2)});
  accumulator.add({torch::stack({torch::eye(5), one_hot_attention({3, 2, 1, 0})}).unsqueeze(1)});
  EXPECT_EQ(accumulator.images(), 3);
  EXPECT_EQ(accumulator.grid(), 2);
  const auto mean = accumulator.mean();
  EXPECT_EQ(mean.scalar_type(), torch::kDouble);
  EXPECT_TRUE(near(mean, values({(6.4 + 19.2 * kSqrt2) / 3}, {1, 1}), 1e-5)) << mean;
  EXPECT_TRUE(near(mean, values({11.1843}, {1, 1}))) << mean;
}

// The contract with the model. Every distance lies between 0 and the grid diagonal
// 4 * 2 * sqrt 2; renormalising divides each query by a patch mass below 1 (the class
// token takes the rest), so it can only grow the distance.
TEST(AttentionDistance, AcceptsModelAttention) {
  torch::manual_seed(0);
  ModelConfig config;
  config.image_size = 12;  // 3x3 grid of 4-pixel patches
  config.dim = 16;
  config.depth = 3;
  config.heads = 2;
  config.mlp_dim = 32;
  VisionTransformer model(config);
  model->eval();
  torch::NoGradGuard no_grad;
  const auto attentions = model->forward_with_attention(torch::randn({5, 3, 12, 12})).attention;
  const auto plain = mean_attention_distance(attentions, config.patch_size);
  const auto renormalized = mean_attention_distance(attentions, config.patch_size, true);
  ASSERT_EQ(plain.sizes(), (std::vector<int64_t>{5, 3, 2}));
  EXPECT_GT(plain.min().item<double>(), 0.0);
  EXPECT_LT(renormalized.max().item<double>(), 8 * kSqrt2);
  EXPECT_TRUE((renormalized > plain).all().item<bool>());
}

TEST(AttentionDistance, RejectsBadInputs) {
  const auto good = torch::full({1, 1, 5, 5}, 0.2);
  expect_throws_with([] { mean_attention_distance({}, 16); },
                     "attention distance: no attention layers given");
  expect_throws_with(
      [] {
        mean_attention_distance({torch::ones({1, 1, 6, 6})}, 16);
      },
      "attention distance: 6 tokens is not 1 + g*g");
  expect_throws_with([&] { mean_attention_distance({good}, 0); },
                     "attention distance: patch size 0 is not positive");
  expect_throws_with([] { patch_distance_matrix(0, 16); },
                     "attention distance: grid side 0 is not positive");
  expect_throws_with([] { AttentionDistanceAccumulator(-4); }, "patch size -4 is not positive");
  auto negative = good.clone();
  negative[0][0][1][2] = -0.01;
  expect_throws_with(
      [&] {
        mean_attention_distance({good, negative}, 16);
      },
      "attention distance: attentions[1] has negative or non-finite entries");
  auto not_a_number = good.clone();
  not_a_number[0][0][4][1] = std::nan("");
  expect_throws_with([&] { mean_attention_distance({not_a_number}, 16, true); },
                     "attentions[0] has negative or non-finite entries");
  expect_throws_with(
      [] {
        average_over_images(torch::zeros({2, 3}));
      },
      "attention distance: per-image distances have shape [2, 3]; expected "
      "(B,L,H) with B >= 1");

  AttentionDistanceAccumulator accumulator(16);
  expect_throws_with([&] { accumulator.mean(); }, "no images added yet");
  accumulator.add({good});
  expect_throws_with(
      [&] {
        accumulator.add({good.expand({1, 2, 5, 5})});
      },
      "attention distance: batch has 1 layers x 2 heads on a 2x2 grid but "
      "earlier batches had 1 layers x 1 heads on a 2x2 grid");
  EXPECT_EQ(accumulator.images(), 1);
}

}  // namespace attention_distance_test
}  // namespace vit
