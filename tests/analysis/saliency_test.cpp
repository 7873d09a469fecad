#include "vit/analysis/saliency.hpp"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "eight_pixel_model.hpp"
#include "error_of.hpp"
#include "vit/model/vision_transformer.hpp"

namespace vit {
namespace {

using testing::error_of;

// Tokens [class, p0, p1, p2, p3] (a 2x2 grid). e(i, j): the 5x5 matrix with a 1 at (i, j).
torch::Tensor e(int64_t i, int64_t j) {
  auto m = torch::zeros({5, 5}, torch::kDouble);
  m[i][j] = 1.0;
  return m;
}

// Two heads per layer. Head 0 holds `wanted` with gradient 2, head 1 holds
// `noise` with gradient -1: the positive part drops head 1 and the mean over
// the two heads halves head 0, so A_bar = wanted.
std::pair<torch::Tensor, torch::Tensor> layer(const torch::Tensor& wanted,
                                              const torch::Tensor& noise) {
  const auto attention = torch::stack({wanted, noise}).unsqueeze(0);  // (1, 2, 5, 5)
  const auto gradient = torch::stack({torch::full({5, 5}, 2.0, torch::kDouble),
                                      torch::full({5, 5}, -1.0, torch::kDouble)})
                            .unsqueeze(0);
  return {attention, gradient};
}

// A_bar_1 = e(0,1) + e(2,3), A_bar_2 = e(0,2) + e(1,4). The paper's order,
// R = (I + A_bar_2)(I + A_bar_1), gives class row e0 + e1 + e2 + e3: patches
// [1 1 1 0]. The reverse product (vit-explain's issue #6) would give e0 + e1 + e2
// + e4: patches [1 1 0 1].
TEST(GradientRollout, MultipliesInThePapersOrder) {
  const auto noise = torch::full({5, 5}, 0.7, torch::kDouble);
  const auto [a1, g1] = layer(e(0, 1) + e(2, 3), noise);
  const auto [a2, g2] = layer(e(0, 2) + e(1, 4), noise);
  const auto map = gradient_rollout({a1, a2}, {g1, g2});
  ASSERT_EQ(map.sizes(), (std::vector<int64_t>{1, 2, 2}));
  EXPECT_TRUE(
      torch::equal(map[0], torch::tensor({1.0, 1.0, 1.0, 0.0}, torch::kDouble).view({2, 2})))
      << map;
}

// Patch-mean source: rows 1..4 of R - I, R = (I + A_bar_2)(I + A_bar_1), averaged.
// Row 1 of R = e1 + e4 (A_bar_1 row 4 is 0); row 2 = e2 + e3; rows 3, 4 = e3, e4.
// Minus I: row 1 = e4, row 2 = e3, rows 3, 4 = 0. Mean over 4 rows of patch
// columns: [0, 0, 1, 1] / 4 (with the identity, every patch would gain 1/4).
TEST(GradientRollout, PatchMeanSource) {
  const auto noise = torch::full({5, 5}, 0.7, torch::kDouble);
  const auto [a1, g1] = layer(e(0, 1) + e(2, 3), noise);
  const auto [a2, g2] = layer(e(0, 2) + e(1, 4), noise);
  const auto map = gradient_rollout({a1, a2}, {g1, g2}, RolloutSource::kPatchMean);
  EXPECT_TRUE(
      torch::allclose(map[0], torch::tensor({0.0, 0.0, 0.25, 0.25}, torch::kDouble).view({2, 2})))
      << map;
}

TEST(GradientRollout, MismatchedGradientsAreClearErrors) {
  const auto a = torch::full({1, 1, 5, 5}, 0.2);
  EXPECT_EQ(error_of([&] {
              gradient_rollout({a, a}, {a});
            }),
            "gradient rollout: 1 gradient tensors for 2 attention layers; expected one per layer");
  EXPECT_EQ(error_of([&] {
              gradient_rollout({a}, {torch::zeros({1, 1, 4, 4})});
            }),
            "gradient rollout: gradients[0] is [1, 1, 4, 4]; expected the attention's shape [1, "
            "1, 5, 5]");
}

TEST(SaliencyMethod, NamesRoundTrip) {
  for (const char* name :
       {"grad", "grad-x-input", "grad-rollout", "integrated-gradients", "smoothgrad"})
    EXPECT_STREQ(enum_name(enum_named<SaliencyMethod>(name, "--method")), name);
  EXPECT_EQ(error_of([] { enum_named<SaliencyMethod>("lrp", "--method", ""); }),
            "--method is 'lrp', expected grad | grad-x-input | grad-rollout | integrated-gradients "
            "| smoothgrad");
}

class SaliencyOnAModel : public ::testing::Test {
 protected:
  void SetUp() override {
    model_ = testing::eight_pixel_model(1);
    x_ = torch::randn({3, 3, 8, 8});
  }
  // d logit_c / d x for each image alone, through the fast forward path.
  torch::Tensor reference_gradient(int64_t image, int64_t cls) {
    auto x = x_.slice(0, image, image + 1).clone().requires_grad_(true);
    model_->forward(x)[0][cls].backward();
    return x.grad()[0];  // (C, S, S)
  }
  VisionTransformer model_{nullptr};
  torch::Tensor x_;
};

TEST_F(SaliencyOnAModel, GradIsTheMaxAbsoluteInputGradientOfThePredictedClass) {
  const auto s = compute_saliency(model_, x_, SaliencyMethod::kGrad);
  ASSERT_EQ(s.maps.sizes(), (std::vector<int64_t>{3, 8, 8}));
  EXPECT_TRUE(torch::equal(s.classes, s.logits.argmax(1)));
  for (int64_t b = 0; b < 3; ++b) {
    const auto g = reference_gradient(b, s.classes[b].item<int64_t>());
    EXPECT_TRUE(torch::allclose(s.maps[b], g.abs().amax(0), 1e-4, 1e-6)) << b;
  }
}

TEST_F(SaliencyOnAModel, GradTimesInputOfAChosenClass) {
  const auto classes = torch::tensor({2, 0, 1}, torch::kLong);
  const auto s = compute_saliency(model_, x_, SaliencyMethod::kGradXInput, classes);
  EXPECT_TRUE(torch::equal(s.classes, classes));
  for (int64_t b = 0; b < 3; ++b) {
    const auto g = reference_gradient(b, classes[b].item<int64_t>());
    EXPECT_TRUE(torch::allclose(s.maps[b], (x_[b] * g).sum(0).abs(), 1e-4, 1e-6)) << b;
  }
}

// torch::autograd::grad, not backward(): the parameters' .grad stays untouched.
TEST_F(SaliencyOnAModel, LeavesTheParametersGradientsAlone) {
  compute_saliency(model_, x_, SaliencyMethod::kGradRollout);
  for (const auto& p : model_->parameters())
    EXPECT_FALSE(p.grad().defined());
}

TEST_F(SaliencyOnAModel, GradRolloutOfABatchEqualsEachImageAlone) {
  const auto all = compute_saliency(model_, x_, SaliencyMethod::kGradRollout);
  ASSERT_EQ(all.maps.sizes(), (std::vector<int64_t>{3, 2, 2}));
  for (int64_t b = 0; b < 3; ++b) {
    const auto one = compute_saliency(model_, x_.slice(0, b, b + 1), SaliencyMethod::kGradRollout);
    EXPECT_TRUE(torch::allclose(all.maps[b], one.maps[0], 1e-5, 1e-7)) << b;
  }
}

TEST_F(SaliencyOnAModel, ClassOutOfRangeIsAClearError) {
  EXPECT_EQ(error_of([&] {
              compute_saliency(model_, x_, SaliencyMethod::kGrad, torch::tensor({0, 3, 1}));
            }),
            "saliency: class 3 is outside the model's classes 0..2");
}

}  // namespace
}  // namespace vit
