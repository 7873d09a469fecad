#include "vit/analysis/rollout.hpp"

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
namespace rollout_test {

// Tokens are [class, p0, p1, p2, p3] for a 2x2 grid throughout.
constexpr double kTol = 1e-6;

// A (N,N) matrix from its rows, as one layer (1,1,N,N).
torch::Tensor one_layer(const std::vector<double>& rows, torch::ScalarType dtype = torch::kFloat) {
  const auto n = static_cast<int64_t>(std::llround(std::sqrt(rows.size())));
  return torch::tensor(rows, torch::kDouble).view({1, 1, n, n}).to(dtype);
}

using testing::values;

bool near(const torch::Tensor& actual, const torch::Tensor& expected, double tol = kTol) {
  return testing::near(actual, expected, tol);
}

void expect_error(const std::function<void()>& call, const std::string& fragment) {
  EXPECT_TRUE(testing::throws_error_containing(call, fragment));
}

// The issue's example: A1 as below, then A2 uniform 0.2.
const std::vector<double> kA1 = {.2,  .2,  .2,  .2,  .2,  //
                                 .5,  .5,  0,   0,   0,   //
                                 0,   0,   1,   0,   0,   //
                                 .25, .25, .25, .25, 0,   //
                                 0,   0,   0,   .5,  .5};
const std::vector<double> kUniform(25, 0.2);

// Adding I makes every row of A1 and A2 sum to 2, so M = (A + I) / 2:
//   M1 = [.6 .1 .1 .1 .1; .25 .75 0 0 0; 0 0 1 0 0; .125 .125 .125 .625 0; 0 0 0 .25 .75]
//   M2 = .1 everywhere, .6 on the diagonal.
// R[0] = M2[0] M1 = .6 M1[0] + .1 (M1[1] + ... + M1[4])
//      = .6 [.6 .1 .1 .1 .1] + .1 [.375 .875 1.125 .875 .75]
//      = [.3975 .1475 .1725 .1475 .135]; the mask is R[0,1:] / .1725.
TEST(AttentionRollout, IssueExampleClassTokenRowAndMask) {
  const std::vector<torch::Tensor> attentions = {one_layer(kA1), one_layer(kUniform)};
  const auto rollout = rollout_matrix(attentions);
  EXPECT_EQ(rollout.scalar_type(), torch::kFloat);
  EXPECT_TRUE(near(rollout[0][0], values({0.3975, 0.1475, 0.1725, 0.1475, 0.135}, {5})))
      << rollout[0][0];
  const auto mask = rollout_masks(attentions);
  EXPECT_TRUE(near(mask, values({0.855072, 1.0, 0.855072, 0.782609}, {1, 2, 2}))) << mask;
  EXPECT_TRUE(
      near(mask, values({0.1475 / 0.1725, 1.0, 0.1475 / 0.1725, 0.135 / 0.1725}, {1, 2, 2})));
  EXPECT_TRUE(near(rollout_masks_from_matrix(rollout, RolloutSource::kClassToken), mask));
}

// Mean of R's patch rows = 1/4 (M2[1] + ... + M2[4]) M1. Columns of M2's rows 1..4
// sum to .4 (class) and .9 (each patch), so the patch part is
//   .4 [.1 .1 .1 .1] + .9 [.875 1.125 .875 .75] = [.8275 1.0525 .8275 .715] (times 1/4),
// divided by its maximum 1.0525.
TEST(AttentionRollout, PatchMeanSourceUsesMeanOfPatchRows) {
  const std::vector<torch::Tensor> attentions = {one_layer(kA1), one_layer(kUniform)};
  RolloutOptions options;
  options.source = RolloutSource::kPatchMean;
  const auto expected = values({.8275 / 1.0525, 1.0, .8275 / 1.0525, .715 / 1.0525}, {1, 2, 2});
  const auto mask = rollout_masks(attentions, options);
  EXPECT_TRUE(near(mask, expected)) << mask;
  EXPECT_TRUE(
      near(rollout_masks_from_matrix(rollout_matrix(attentions), options.source), expected));
}

// (J/N + I)/2 matrices commute and keep the form aI + bJ/N, so every patch gets the
// same share of the class token: the mask is 1 everywhere, from any row source.
TEST(AttentionRollout, UniformAttentionGivesFlatMaskForAnyDepth) {
  const int64_t tokens = 17;  // 4x4 grid
  for (int64_t depth : {1, 2, 5}) {
    const std::vector<torch::Tensor> attentions(depth,
                                                torch::full({2, 3, tokens, tokens}, 1.0 / tokens));
    for (auto source : {RolloutSource::kClassToken, RolloutSource::kPatchMean}) {
      RolloutOptions options;
      options.source = source;
      const auto mask = rollout_masks(attentions, options);
      EXPECT_TRUE(near(mask, torch::ones({2, 4, 4}, torch::kDouble))) << depth << "\n" << mask;
    }
  }
}

// A = I gives M = (I + I)/2 = I and R = I: the class token keeps everything, so its
// map has no positive entry and must be all zeros (not 0/0). The mean of the patch
// rows is 1/4 on every patch, so that map is all ones.
TEST(AttentionRollout, IdentityAttentionIsFiniteAndExact) {
  const auto identity = torch::eye(5).expand({3, 2, 5, 5});
  const std::vector<torch::Tensor> attentions = {identity, identity};
  EXPECT_TRUE(near(rollout_matrix(attentions), torch::eye(5, torch::kDouble).expand({3, 5, 5})));
  const auto cls_mask = rollout_masks(attentions);
  EXPECT_TRUE(near(cls_mask, torch::zeros({3, 2, 2}, torch::kDouble))) << cls_mask;
  RolloutOptions options;
  options.source = RolloutSource::kPatchMean;
  EXPECT_TRUE(near(rollout_masks(attentions, options), torch::ones({3, 2, 2}, torch::kDouble)));
}

// Layer 1 has two heads that differ only in the class-token row:
//   a: [.2 .4 .2 .2 0], b: [.2 0 .2 .2 .4]; patch rows are one-hot on themselves.
// Layer 2 is the identity, so R = M1 and only fused row 0 matters:
//   mean [.2 .2 .2 .2 .2] + I -> [.6 .1 .1 .1 .1]          mask [1 1 1 1]
//   max  [.2 .4 .2 .2 .4] + I -> [1.2 .4 .2 .2 .4] / 2.4   mask [1 .5 .5 1]
//   min  [.2 0 .2 .2 0]   + I -> [1.2 0 .2 .2 0] / 1.6     mask [0 1 1 0]
TEST(AttentionRollout, HeadFusionMeanMaxMin) {
  auto heads = torch::eye(5, torch::kDouble).repeat({1, 2, 1, 1});  // (1, 2, 5, 5)
  heads[0][0][0] = values({.2, .4, .2, .2, 0}, {5});
  heads[0][1][0] = values({.2, 0, .2, .2, .4}, {5});
  const std::vector<torch::Tensor> attentions = {
      heads, torch::eye(5, torch::kDouble).expand({1, 2, 5, 5})};
  struct Case {
    HeadFusion fusion;
    std::vector<double> row;
    std::vector<double> mask;
  };
  const std::vector<Case> cases = {
      {HeadFusion::kMean, {.6, .1, .1, .1, .1}, {1, 1, 1, 1}},
      {HeadFusion::kMax, {.5, 1 / 6.0, 1 / 12.0, 1 / 12.0, 1 / 6.0}, {1, .5, .5, 1}},
      {HeadFusion::kMin, {.75, 0, .125, .125, 0}, {0, 1, 1, 0}},
  };
  for (const auto& c : cases) {
    RolloutOptions options;
    options.fusion = c.fusion;
    const std::string name = enum_name(c.fusion);
    EXPECT_TRUE(near(rollout_matrix(attentions, options)[0][0], values(c.row, {5}))) << name;
    EXPECT_TRUE(near(rollout_masks(attentions, options), values(c.mask, {1, 2, 2}))) << name;
  }
}

TEST(AttentionRollout, HeadFusionNamesRoundTrip) {
  for (auto fusion : {HeadFusion::kMean, HeadFusion::kMax, HeadFusion::kMin}) {
    EXPECT_EQ(enum_named<HeadFusion>(enum_name(fusion), "analysis.head_fusion"), fusion);
  }
  EXPECT_STREQ(enum_name(HeadFusion::kMin), "min");
  EXPECT_STREQ(enum_name(RolloutSource::kClassToken), "class_token");
  EXPECT_STREQ(enum_name(RolloutSource::kPatchMean), "patch_mean");
  EXPECT_STREQ(enum_name(RolloutSource::kAttentionPool), "attention_pool");
  EXPECT_EQ(rollout_source_of(Pool::kCls), RolloutSource::kClassToken);
  EXPECT_EQ(rollout_source_of(Pool::kMean), RolloutSource::kPatchMean);
  EXPECT_EQ(rollout_source_of(Pool::kMap), RolloutSource::kAttentionPool);
  expect_error([] { enum_named<HeadFusion>("avg", "analysis.head_fusion"); },
               "invalid config: analysis.head_fusion is 'avg', expected mean | max | min");
}

// Patch-to-patch block (rows/cols 1..4) of kDiscard, with row-major positions:
//   row 1: .2   .2   .2   .2     (0..3)
//   row 2: .25  .25  .25  .25    (4..7)
//   row 3: .125 .125 .125 .125   (8..11)
//   row 4: .125 .25  .25  .25    (12..15)
// k = floor(ratio * 16). For ratio .25 (and .3: 4.8 -> 4) the four smallest are the
// five tied .125s minus the last in row-major order: row 3 loses its patch entries,
// row 4 keeps its .125. Then (+I, row sums):
//   row 3: [.5 0 0 1 0] / 1.5;  row 4: [.125 .125 .25 .25 1.25] / 2 (untouched).
// Ratio 5/16 also drops row 4's .125: [.125 0 .25 .25 1.25] / 1.875.
const std::vector<double> kDiscard = {.2,   .2,   .2,   .2,   .2,    //
                                      .2,   .2,   .2,   .2,   .2,    //
                                      0,    .25,  .25,  .25,  .25,   //
                                      .5,   .125, .125, .125, .125,  //
                                      .125, .125, .25,  .25,  .25};
const std::vector<double> kDiscardedRollout = {.6,      .1,    .1,   .1,      .1,    //
                                               .1,      .6,    .1,   .1,      .1,    //
                                               0,       .125,  .625, .125,    .125,  //
                                               1 / 3.0, 0,     0,    2 / 3.0, 0,     //
                                               .0625,   .0625, .125, .125,    .625};

TEST(AttentionRollout, DiscardDropsSmallestPatchLinksWithTiesInRowMajorOrder) {
  RolloutOptions options;
  for (double ratio : {0.25, 0.3}) {
    options.discard_ratio = ratio;
    const auto rollout = rollout_matrix({one_layer(kDiscard, torch::kDouble)}, options);
    EXPECT_TRUE(near(rollout, values(kDiscardedRollout, {1, 5, 5}))) << ratio << "\n" << rollout;
  }
  options.discard_ratio = 5.0 / 16.0;
  const auto rollout = rollout_matrix({one_layer(kDiscard, torch::kDouble)}, options);
  EXPECT_TRUE(
      near(rollout[0][4], values({.125 / 1.875, 0, .25 / 1.875, .25 / 1.875, 1.25 / 1.875}, {5})))
      << rollout;
  // With ratio 0 nothing is dropped: row 3 is [1.5 .125 .125 1.125 .125] / 2.
  options.discard_ratio = 0.0;
  EXPECT_TRUE(near(rollout_matrix({one_layer(kDiscard)}, options)[0][3],
                   values({.25, .0625, .0625, .5625, .0625}, {5})));
}

// Mean of the patch rows of the discarded matrix above, patch columns:
//   [.6+.125+0+.0625, .1+.625+0+.125, .1+.125+2/3+.125, .1+.125+0+.625] / 4
//   = [.7875 .85 61/60 .85] / 4, divided by the maximum 61/60.
TEST(AttentionRollout, DiscardReachesTheMasks) {
  RolloutOptions options;
  options.discard_ratio = 0.25;
  options.source = RolloutSource::kPatchMean;
  const auto mask = rollout_masks({one_layer(kDiscard)}, options);
  EXPECT_TRUE(near(mask, values({.7875 * 60 / 61, .85 * 60 / 61, 1, .85 * 60 / 61}, {1, 2, 2})))
      << mask;
}

// Per sample: the uniform sample's 16 tied entries lose the first four in row-major
// order (all of row 1), so its row 1 becomes [.2 0 0 0 0] + I = [.2 1 0 0 0] / 1.2,
// while the kDiscard sample comes out exactly as when it is alone.
TEST(AttentionRollout, DiscardIsPerSample) {
  RolloutOptions options;
  options.discard_ratio = 0.25;
  const auto batch = torch::cat({one_layer(kDiscard), one_layer(kUniform)});  // (2, 1, 5, 5)
  const auto rollout = rollout_matrix({batch}, options);
  EXPECT_TRUE(near(rollout[0], values(kDiscardedRollout, {5, 5})));
  auto uniform = torch::full({5, 5}, .1, torch::kDouble) + .5 * torch::eye(5, torch::kDouble);
  uniform[1] = values({1 / 6.0, 5 / 6.0, 0, 0, 0}, {5});
  EXPECT_TRUE(near(rollout[1], uniform)) << rollout[1];
}

// Sample 2 is sample 1 with the patches reversed (token i <-> 5 - i), i.e. the grid
// turned by 180 degrees: its mask is sample 1's, reversed.
TEST(AttentionRollout, BatchSamplesAreIndependent) {
  const auto order = torch::tensor({0, 4, 3, 2, 1}, torch::kLong);
  const auto a1 = one_layer(kA1);
  const auto a1_reversed = a1.index_select(2, order).index_select(3, order);
  const std::vector<torch::Tensor> attentions = {torch::cat({a1, a1_reversed}),
                                                 one_layer(kUniform).expand({2, 1, 5, 5})};
  const auto mask = rollout_masks(attentions);
  const double a = 0.1475 / 0.1725, c = 0.135 / 0.1725;
  EXPECT_TRUE(near(mask, values({a, 1, a, c, c, a, 1, a}, {2, 2, 2}))) << mask;
}

// A full-size check that the fast row-vector path equals the full product.
TEST(AttentionRollout, MasksMatchFullMatrixOnRandomAttention) {
  torch::manual_seed(3);
  std::vector<torch::Tensor> attentions;
  for (int l = 0; l < 4; ++l) {
    attentions.push_back(torch::softmax(torch::randn({3, 4, 17, 17}) * 3, /*dim=*/-1));
  }
  for (auto source : {RolloutSource::kClassToken, RolloutSource::kPatchMean}) {
    RolloutOptions options;
    options.fusion = HeadFusion::kMax;
    options.discard_ratio = 0.9;
    options.source = source;
    const auto expected = rollout_masks_from_matrix(rollout_matrix(attentions, options), source);
    EXPECT_TRUE(near(rollout_masks(attentions, options), expected, 1e-5));
    EXPECT_EQ(expected.amax({1, 2}).to(torch::kDouble).sum().item<double>(), 3.0);
  }
}

// pool "map": image b's map is w_b^T R_b, w_b the pool's query's attention
// over the patches (its heads' mean) and zero on the prefix. In float64 the
// row-vector path and the full product agree to rounding (1e-12).
TEST(AttentionRollout, TheAttentionPoolsQueryWeighsThePatchRows) {
  torch::manual_seed(4);
  std::vector<torch::Tensor> attentions;
  for (int l = 0; l < 3; ++l)
    attentions.push_back(torch::softmax(torch::randn({2, 3, 5, 5}, torch::kDouble) * 2, -1));
  const auto pool = torch::softmax(torch::randn({2, 3, 1, 4}, torch::kDouble), -1);
  RolloutOptions options;
  options.source = RolloutSource::kAttentionPool;
  options.pool_attention = pool;
  const auto rollout = rollout_matrix(attentions, options);  // (2, 5, 5)
  const auto w = pool.mean(/*dim=*/1).squeeze(1);            // (2, 4)
  for (int64_t b = 0; b < 2; ++b) {
    auto row = torch::zeros({4}, torch::kDouble);
    for (int64_t p = 0; p < 4; ++p)
      row += w[b][p] * rollout[b][1 + p].slice(0, 1);
    const auto expected = (row / row.max()).view({2, 2});
    EXPECT_TRUE(near(rollout_masks(attentions, options)[b], expected, 1e-12)) << b;
    EXPECT_TRUE(
        near(rollout_masks_from_matrix(rollout, options.source, 1, pool)[b], expected, 1e-12))
        << b;
  }
  // A query on one patch alone gives that patch's row of R.
  auto one_hot = torch::zeros({2, 3, 1, 4}, torch::kDouble);
  one_hot.select(3, 2).fill_(1.0);
  options.pool_attention = one_hot;
  const auto row = rollout[1][3].slice(0, 1);
  EXPECT_TRUE(near(rollout_masks(attentions, options)[1], (row / row.max()).view({2, 2}), 1e-12));
  options.pool_attention = torch::Tensor();
  expect_error([&] { rollout_masks(attentions, options); },
               "attention rollout: the attention pool's source needs its probabilities, (B,H,1,P) "
               "with B = 2 and P = 4, got none");
  options.pool_attention = torch::ones({2, 3, 1, 5}, torch::kDouble);
  expect_error([&] { rollout_masks(attentions, options); }, "got [2, 3, 1, 5]");
}

// bf16 input is computed in float32. Entries are exact in bf16:
// row 0 [.25 .5 0 .25 0] + I -> [1.25 .5 0 .25 0] / 2, mask [.5 0 .25 0] / .5.
TEST(AttentionRollout, LowPrecisionInputIsComputedInFloat32) {
  auto layer = torch::eye(5).view({1, 1, 5, 5}).clone();
  layer[0][0][0] = values({.25, .5, 0, .25, 0}, {5});
  const auto mask = rollout_masks({layer.to(torch::kBFloat16)});
  EXPECT_EQ(mask.scalar_type(), torch::kFloat);
  EXPECT_TRUE(near(mask, values({1, 0, .5, 0}, {1, 2, 2}))) << mask;
  EXPECT_EQ(rollout_matrix({layer.to(torch::kDouble)}).scalar_type(), torch::kDouble);
}

// The contract with the model: forward_with_attention's list goes in as it is.
TEST(AttentionRollout, AcceptsModelAttention) {
  torch::manual_seed(0);
  ModelConfig config;
  config.image_size = 12;  // 3x3 grid of 4-pixel patches, 10 tokens
  config.dim = 16;
  config.depth = 2;
  config.heads = 2;
  config.mlp_dim = 32;
  VisionTransformer model(config);
  model->eval();
  torch::NoGradGuard no_grad;
  const auto attentions = model->forward_with_attention(torch::randn({4, 3, 12, 12})).attention;
  const auto masks = rollout_masks(attentions);
  ASSERT_EQ(masks.sizes(), (std::vector<int64_t>{4, 3, 3}));
  EXPECT_TRUE(near(masks.amax({1, 2}), torch::ones({4}, torch::kDouble), 0.0));
  EXPECT_GT(masks.min().item<double>(), 0.0);  // softmax never gives an exact zero
  EXPECT_TRUE(near(
      masks, rollout_masks_from_matrix(rollout_matrix(attentions), RolloutSource::kClassToken)));
}

TEST(AttentionRollout, RejectsBadInputs) {
  const auto good = one_layer(kA1);
  expect_error([] { rollout_masks({}); },
               "attention rollout: no attention layers given; expected one (B,H,N,N) tensor");
  expect_error([] { rollout_matrix({torch::Tensor()}); },
               "attention rollout: attentions[0] is an undefined tensor");
  expect_error(
      [] {
        rollout_masks({torch::ones({1, 5, 5})});
      },
      "attention rollout: attentions[0] has shape [1, 5, 5]; expected (B,H,N,N)");
  expect_error(
      [] {
        rollout_masks({torch::ones({1, 1, 5, 4})});
      },
      "attentions[0] has shape [1, 1, 5, 4]; expected (B,H,N,N)");
  expect_error(
      [] {
        rollout_masks({torch::ones({1, 1, 6, 6})});
      },
      "attention rollout: 6 tokens is not 1 + g*g; expected a class token plus a "
      "square patch grid");
  expect_error([] { rollout_masks({torch::ones({1, 1, 1, 1})}); }, "1 tokens is not 1 + g*g");
  expect_error(
      [] {
        rollout_masks({torch::ones({0, 1, 5, 5})});
      },
      "attention shape [0, 1, 5, 5] has no images or no heads");
  expect_error(
      [&] {
        rollout_masks({good, torch::ones({1, 1, 10, 10})});
      },
      "attentions[1] is [1, 1, 10, 10] Float on cpu but attentions[0] is "
      "[1, 1, 5, 5] Float on cpu; all layers must match");
  expect_error(
      [&] {
        rollout_masks({good, good.to(torch::kDouble)});
      },
      "attentions[1] is [1, 1, 5, 5] Double on cpu but attentions[0] is "
      "[1, 1, 5, 5] Float on cpu");
  expect_error(
      [] {
        rollout_masks({torch::ones({1, 1, 5, 5}, torch::kLong)});
      },
      "attentions[0] has dtype Long; expected a floating-point type");
  RolloutOptions options;
  for (double ratio : {-0.1, 1.0, std::nan("")}) {
    options.discard_ratio = ratio;
    expect_error([&] { rollout_masks({good}, options); }, "is outside [0, 1)");
  }
  options.discard_ratio = 1.0;
  expect_error([&] { rollout_matrix({good}, options); },
               "attention rollout: discard ratio 1 is outside [0, 1)");
  auto negative = good.clone();
  negative[0][0][2][1] = -0.01;
  expect_error(
      [&] {
        rollout_masks({good, negative});
      },
      "attention rollout: attentions[1] has negative or non-finite entries");
  auto not_a_number = good.clone();
  not_a_number[0][0][3][3] = std::nan("");
  expect_error(
      [&] {
        rollout_matrix({not_a_number, good});
      },
      "attentions[0] has negative or non-finite entries");
  expect_error(
      [] {
        rollout_masks_from_matrix(torch::ones({5, 5}), RolloutSource::kClassToken);
      },
      "attention rollout: rollout matrix has shape [5, 5]; expected (B,N,N)");
}

}  // namespace rollout_test
}  // namespace vit
