#include "vit/analysis/faithfulness.hpp"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "../weights/small_model.hpp"
#include "error_of.hpp"

namespace vit {
namespace {

using testing::error_of;

TEST(Faithfulness, RemovedCountsEndAtEveryPatch) {
  EXPECT_EQ(removed_counts(16, 5), (std::vector<int64_t>{0, 5, 10, 15, 16}));
  EXPECT_EQ(removed_counts(4, 4), (std::vector<int64_t>{0, 4}));
  EXPECT_EQ(removed_counts(3, 1), (std::vector<int64_t>{0, 1, 2, 3}));
  EXPECT_EQ(error_of([] { removed_counts(16, 17); }),
            "faithfulness: step 17, expected 1..16 (the number of patches)");
}

TEST(Faithfulness, AreaIsTheTrapezoidOverTheFractionRemoved) {
  // Steps of 2 of 4 patches: x = 0, 0.5, 1.
  EXPECT_DOUBLE_EQ(curve_area({1.0, 0.5, 0.0}, 4, 2), 0.5 * 1.5 * 0.5 + 0.5 * 0.5 * 0.5);
  // 5 patches, steps of 2: x = 0, 0.4, 0.8, 1 (the last step is shorter).
  EXPECT_DOUBLE_EQ(curve_area({1.0, 1.0, 1.0, 1.0}, 5, 2), 1.0);
  EXPECT_NEAR(curve_area({0.0, 0.0, 0.0, 1.0}, 5, 2), 0.5 * 0.2, 1e-15);
  EXPECT_NE(error_of([] { curve_area({1.0, 0.0}, 5, 2); }).find("expected 4"), std::string::npos);
}

TEST(Faithfulness, OrderIsMostSalientFirstWithTiesInRowMajorOrder) {
  const auto scores = torch::tensor({1.0, 3.0, 3.0, 0.0}).view({1, 2, 2});
  const auto order = salience_order(scores);
  EXPECT_TRUE(order.equal(torch::tensor({1, 2, 0, 3}, torch::kLong).view({1, 4})));
}

TEST(Faithfulness, PatchSumsAddTheAbsoluteMapOverEachPatch) {
  // A 4x4 map in 2x2 patches: the top-left patch holds 1, -2, 3, -4.
  auto map = torch::zeros({1, 4, 4});
  map[0][0][0] = 1;
  map[0][0][1] = -2;
  map[0][1][0] = 3;
  map[0][1][1] = -4;
  map[0][3][3] = 0.5;
  const auto sums = patch_sums(map, 2);
  EXPECT_TRUE(sums.equal(torch::tensor({10.0f, 0.0f, 0.0f, 0.5f}).view({1, 2, 2})));
}

TEST(Faithfulness, RandomOrdersArePermutationsFixedByTheSeedAndPosition) {
  const auto a = random_order(3, 16, /*seed=*/5, /*first=*/0);
  for (int64_t b = 0; b < 3; ++b)
    EXPECT_TRUE(std::get<0>(a[b].sort()).equal(torch::arange(16, torch::kLong)));
  EXPECT_TRUE(a.equal(random_order(3, 16, 5, 0)));
  EXPECT_TRUE(a[1].equal(random_order(1, 16, 5, 1)[0]));  // the same image in another batch
  EXPECT_FALSE(a[0].equal(a[1]));
  EXPECT_FALSE(a.equal(random_order(3, 16, 6, 0)));
}

class FaithfulnessCurvesTest : public ::testing::TestWithParam<Pool> {};

TEST_P(FaithfulnessCurvesTest, EndPointsAreTheIntactAndTheAllMeanImages) {
  Config c = testing::small_config();
  c.model.pool = GetParam();
  auto model = testing::seeded_model(c.model, 9);
  torch::manual_seed(10);
  const auto images = torch::randn({3, 3, 16, 16});
  const auto classes = torch::tensor({0, 3, 4}, torch::kLong);
  const auto order = salience_order(torch::rand({3, 16}));
  const FaithfulnessCurves curves = deletion_insertion(model, images, classes, order, 3);
  ASSERT_EQ(curves.deletion.sizes(), (std::vector<int64_t>{3, 7}));  // 0, 3, ..., 15, 16
  torch::NoGradGuard no_grad;
  const auto probability = [&](const at::Tensor& x) {
    return model->forward(x)
        .to(torch::kDouble)
        .softmax(1)
        .gather(1, classes.unsqueeze(1))
        .squeeze(1);
  };
  const auto intact = probability(images);
  const auto all_mean = probability(torch::zeros_like(images));  // 0 = the mean, normalised
  EXPECT_TRUE(torch::allclose(curves.deletion.select(1, 0), intact, 1e-6, 1e-6));
  EXPECT_TRUE(torch::allclose(curves.deletion.select(1, 6), all_mean, 1e-6, 1e-6));
  EXPECT_TRUE(torch::allclose(curves.insertion.select(1, 0), all_mean, 1e-6, 1e-6));
  EXPECT_TRUE(torch::allclose(curves.insertion.select(1, 6), intact, 1e-6, 1e-6));
  // After one step, image 0 lacks exactly its first three patches of the order.
  auto removed = images[0].clone();
  for (int64_t k = 0; k < 3; ++k) {
    const int64_t p = order[0][k].item<int64_t>();
    removed.narrow(1, (p / 4) * 4, 4).narrow(2, (p % 4) * 4, 4).zero_();
  }
  EXPECT_NEAR(
      curves.deletion[0][1].item<double>(),
      probability(removed.unsqueeze(0).expand({3, -1, -1, -1}).contiguous())[0].item<double>(),
      1e-6);
}

INSTANTIATE_TEST_SUITE_P(Pools, FaithfulnessCurvesTest, ::testing::Values(Pool::kCls, Pool::kMean));

TEST(Faithfulness, MethodScoresHaveOneValuePerPatch) {
  const Config c = testing::small_config();
  auto model = testing::seeded_model(c.model, 11);
  const auto images = torch::randn({2, 3, 16, 16});
  const auto classes = torch::tensor({1, 2}, torch::kLong);
  for (const FaithfulnessMethod m : faithfulness_methods()) {
    if (m == FaithfulnessMethod::kRandom) {
      EXPECT_NE(error_of([&] { method_scores(model, images, classes, m, {}); }).find("random"),
                std::string::npos);
      continue;
    }
    EXPECT_EQ(method_scores(model, images, classes, m, {}).sizes(), (std::vector<int64_t>{2, 4, 4}))
        << faithfulness_method_name(m);
  }
  EXPECT_EQ(faithfulness_methods().size(), 7u);
  EXPECT_EQ(faithfulness_method_name(FaithfulnessMethod::kIntegratedGradients),
            "integrated-gradients");
  EXPECT_EQ(faithfulness_method_name(FaithfulnessMethod::kSmoothGrad), "smoothgrad");
  EXPECT_EQ(faithfulness_method_name(FaithfulnessMethod::kGradXInput), "grad-x-input");
}

}  // namespace
}  // namespace vit
