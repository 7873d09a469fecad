#include "vit/analysis/logit_lens.hpp"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "../weights/small_model.hpp"
#include "error_of.hpp"
#include "image_batches_helper.hpp"

namespace vit {
namespace {

using testing::error_of;

TEST(LogitLens, QuantilesInterpolateBetweenRanksLikeNumpy) {
  const auto values = torch::tensor({4.0, 1.0, 3.0, 2.0});
  EXPECT_DOUBLE_EQ(linear_quantile(values, 0.5), 2.5);
  EXPECT_NEAR(linear_quantile(values, 0.99), 3.97, 1e-12);  // 1 + 0.99 * 3 = 3.97: between 3 and 4
  EXPECT_DOUBLE_EQ(linear_quantile(values, 0.0), 1.0);
  EXPECT_DOUBLE_EQ(linear_quantile(values, 1.0), 4.0);
  EXPECT_DOUBLE_EQ(linear_quantile(torch::tensor({7.0}), 0.99), 7.0);
  EXPECT_NE(error_of([] {
              linear_quantile(torch::tensor({1.0}), 1.5);
            }).find("expected a value in [0, 1]"),
            std::string::npos);
}

TEST(LogitLens, PatchTokenNormsLeaveTheClassTokenOut) {
  // (1, 3, 2): the class token (100, 0) is left out; the patches are (3, 4) and (0, 1).
  const auto layer = torch::tensor({100.0, 0.0, 3.0, 4.0, 0.0, 1.0}).view({1, 3, 2});
  const auto norms = patch_token_norms(layer);
  ASSERT_EQ(norms.numel(), 2);
  EXPECT_DOUBLE_EQ(norms[0].item<double>(), 5.0);
  EXPECT_DOUBLE_EQ(norms[1].item<double>(), 1.0);
}

class LogitLensModel : public ::testing::TestWithParam<Pool> {};

TEST_P(LogitLensModel, TheLastLayerReadsOutAsTheModelDoes) {
  Config c = testing::small_config();
  c.model.pool = GetParam();
  auto model = testing::seeded_model(c.model, 5);
  torch::manual_seed(6);
  const auto images = torch::randn({7, 3, 16, 16});
  const auto labels = torch::tensor({0, 1, 2, 3, 4, 0, 1}, torch::kLong);
  const LensResult r = logit_lens(model, testing::batches_of(images, 3), labels);
  ASSERT_EQ(r.logits.sizes(), (std::vector<int64_t>{3, 7, 5}));  // layers 0..2, 7 images, 5 classes
  torch::NoGradGuard no_grad;
  const auto expected = model->forward(images);
  EXPECT_TRUE(torch::allclose(r.logits[2], expected, 1e-5, 1e-5));
  EXPECT_DOUBLE_EQ(r.agreement.back(), 1.0);
  const double accuracy = expected.argmax(1).eq(labels).to(torch::kDouble).mean().item<double>();
  EXPECT_DOUBLE_EQ(r.accuracy.back(), accuracy);
  // Layer 0 is the embeddings: its readout is the head on the normalised embeddings.
  const auto embedded = model->embed(images);
  EXPECT_TRUE(torch::allclose(r.logits[0], model->stream_logits(embedded), 1e-5, 1e-5));
  // Token norms: the median of layer 0's 7 * 16 patch tokens.
  EXPECT_NEAR(r.norms.median[0], linear_quantile(patch_token_norms(embedded), 0.5), 1e-4);
  EXPECT_GE(r.norms.max[1], r.norms.p99[1]);
  EXPECT_GE(r.norms.p99[1], r.norms.median[1]);
}

INSTANTIATE_TEST_SUITE_P(Pools, LogitLensModel, ::testing::Values(Pool::kCls, Pool::kMean));

TEST(LogitLens, WithoutLabelsThereIsNoAccuracy) {
  const Config c = testing::small_config();
  auto model = testing::seeded_model(c.model, 5);
  const LensResult r = logit_lens(model, testing::batches_of(torch::randn({2, 3, 16, 16}), 2));
  EXPECT_TRUE(r.accuracy.empty());
  EXPECT_EQ(r.agreement.size(), 3u);
}

// A backbone without a head: the same norms as the model with one (the head
// reads the stream, it does not change it), and no logits.
TEST(LogitLens, ABackboneGetsItsNormsAlone) {
  Config c = testing::small_config();
  c.model.registers = 2;
  auto with_head = testing::seeded_model(c.model, 5);
  c.model.num_classes = 0;
  auto backbone = testing::seeded_model(c.model, 6);
  {
    torch::NoGradGuard no_grad;
    const auto source = with_head->named_parameters();
    for (auto& p : backbone->named_parameters())
      p.value().copy_(source[p.key()]);
  }
  const auto images = torch::randn({3, 3, 16, 16});
  const LensResult a = logit_lens(with_head, testing::batches_of(images, 2));
  const LensResult b = logit_lens(backbone, testing::batches_of(images, 2));
  EXPECT_FALSE(b.logits.defined());
  EXPECT_TRUE(b.agreement.empty());
  EXPECT_TRUE(b.accuracy.empty());
  EXPECT_EQ(b.norms.median, a.norms.median);
  EXPECT_EQ(b.norms.max, a.norms.max);
  EXPECT_EQ(b.norms.high, a.norms.high);
  EXPECT_EQ(b.register_norms.median.size(), 3u);
  EXPECT_EQ(b.register_norms.max, a.register_norms.max);
}

}  // namespace
}  // namespace vit
