#include "vit/analysis/ablation.hpp"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "../weights/small_model.hpp"
#include "error_of.hpp"
#include "image_batches_helper.hpp"
#include "vit/analysis/residual_stream.hpp"

namespace vit {
namespace {

using testing::error_of;

BlockImpl& block(VisionTransformer& model, size_t index) {
  return *model->blocks[index]->as<Block>();
}

void expect_same(const LossAndAccuracy& a, const LossAndAccuracy& b, const std::string& what) {
  EXPECT_NEAR(a.loss, b.loss, 1e-6) << what;
  EXPECT_DOUBLE_EQ(a.accuracy, b.accuracy) << what;
}

class AblationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    config_ = testing::small_config();
    config_.model.dim_head = 6;  // I = 24 != D = 32: the head slices are not the width's
    model_ = testing::seeded_model(config_.model, 7);
    torch::manual_seed(8);
    images_ = torch::randn({6, 3, 16, 16});
    labels_ = torch::tensor({0, 1, 2, 3, 4, 1}, torch::kLong);
  }
  Config config_;
  VisionTransformer model_{nullptr};
  at::Tensor images_, labels_;
};

TEST_F(AblationTest, AHeadWhoseProjectionColumnsAreZeroChangesNothing) {
  {
    torch::NoGradGuard no_grad;
    // Head 2 of block 1 reaches the output only through proj's columns 12..17.
    block(model_, 1).attn->proj->weight.narrow(1, 2 * 6, 6).zero_();
  }
  const AblationResult r =
      ablate(model_, testing::batches_of(images_, 4), labels_, AblationMode::kZero);
  ASSERT_EQ(r.heads.size(), 2u);
  ASSERT_EQ(r.heads[1].size(), 4u);
  expect_same(r.heads[1][2], r.baseline, "head 2 of block 1");
  EXPECT_GT(std::abs(r.heads[0][0].loss - r.baseline.loss), 1e-7) << "another head matters";
}

TEST_F(AblationTest, SkippingABranchWhoseOutputIsZeroChangesNothing) {
  {
    torch::NoGradGuard no_grad;
    block(model_, 0).attn->proj->weight.zero_();
    block(model_, 0).attn->proj->bias.zero_();
    block(model_, 1).mlp->fc2->weight.zero_();
    block(model_, 1).mlp->fc2->bias.zero_();
  }
  const AblationResult r =
      ablate(model_, testing::batches_of(images_, 6), labels_, AblationMode::kZero);
  expect_same(r.attention[0], r.baseline, "attention of block 0");
  expect_same(r.mlp[1], r.baseline, "MLP of block 1");
  EXPECT_GT(std::abs(r.mlp[0].loss - r.baseline.loss), 1e-7) << "block 0's MLP matters";
}

TEST_F(AblationTest, TheMeanOfOneImageIsTheImageItself) {
  const auto one = images_.narrow(0, 0, 1);
  const AblationResult r =
      ablate(model_, testing::batches_of(one, 1), labels_.narrow(0, 0, 1), AblationMode::kMean);
  for (size_t l = 0; l < r.heads.size(); ++l)
    for (size_t h = 0; h < r.heads[l].size(); ++h)
      expect_same(r.heads[l][h], r.baseline, "mean-ablated head of one image");
}

TEST_F(AblationTest, BaselineIsTheModelsCrossEntropyAndPredictionsStandInForLabels) {
  const AblationResult r =
      ablate(model_, testing::batches_of(images_, 4), labels_, AblationMode::kZero);
  torch::NoGradGuard no_grad;
  const auto logits = model_->forward(images_);
  EXPECT_NEAR(r.baseline.loss, torch::nn::functional::cross_entropy(logits, labels_).item<double>(),
              1e-5);
  const AblationResult own =
      ablate(model_, testing::batches_of(images_, 4), {}, AblationMode::kZero);
  EXPECT_DOUBLE_EQ(own.baseline.accuracy, 1.0);
}

TEST_F(AblationTest, LogitsAfterAnUnchangedBlockAreTheModels) {
  const ResidualStream stream = residual_stream(model_, images_);
  torch::NoGradGuard no_grad;
  EXPECT_TRUE(torch::allclose(logits_after(model_, stream.layers[1], BlockAblation{1}),
                              model_->forward(images_), 1e-5, 1e-5));
  EXPECT_NE(error_of([&] {
              logits_after(model_, stream.layers[0], BlockAblation{2});
            }).find("expected 0..1"),
            std::string::npos);
}

TEST(AblationMode, ParsesItsNames) {
  EXPECT_EQ(enum_named<AblationMode>("mean", "--mode"), AblationMode::kMean);
  EXPECT_STREQ(enum_name(enum_named<AblationMode>("zero", "--mode")), "zero");
  EXPECT_EQ(error_of([] { enum_named<AblationMode>("noise", "--mode", ""); }),
            "--mode is 'noise', expected zero | mean");
}

}  // namespace
}  // namespace vit
