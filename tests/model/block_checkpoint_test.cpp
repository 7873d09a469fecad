// train.grad_checkpointing: a checkpointed block gives the gradients it gives
// without checkpointing, with dropout, attention dropout and drop-path
// drawing the same masks in the recompute, under bf16 autocast too.
#include <optional>
#include <vector>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "../weights/small_model.hpp"
#include "vit/infer/precision.hpp"
#include "vit/model/vision_transformer.hpp"

namespace vit {
namespace {

ModelConfig three_blocks() {
  ModelConfig cfg = testing::small_config().model;
  cfg.depth = 3;
  return cfg;
}

ModelConfig stochastic_three_blocks() {
  ModelConfig cfg = three_blocks();
  cfg.dropout = 0.1;
  cfg.attn_dropout = 0.1;
  cfg.drop_path = 0.3;
  return cfg;
}

struct Gradients {
  std::vector<torch::Tensor> parameters;
  torch::Tensor loss;
};

// One training pass of a fresh model of `cfg` (the same weights every
// call) with blocks checkpointed every `every` (0 = none): the loss and
// every parameter's gradient. The random draws start from the same seed.
Gradients gradients_of(const ModelConfig& cfg, int64_t every,
                       std::optional<Precision> autocast = std::nullopt) {
  auto model = testing::seeded_model(cfg, 11);
  model->train();
  model->set_grad_checkpointing(GradCheckpointing{every});
  torch::manual_seed(12);
  const auto images = torch::randn({4, 3, 16, 16});
  torch::manual_seed(13);  // the masks' draws
  torch::Tensor logits;
  {
    std::optional<AutocastScope> scope;
    if (autocast) scope.emplace(*autocast, torch::kCPU);
    logits = model->forward(images).to(torch::kFloat);
  }
  const auto loss = logits.pow(2).mean();
  loss.backward();
  Gradients g;
  g.loss = loss.detach();
  for (const auto& p : model->parameters())
    g.parameters.push_back(p.grad().clone());
  return g;
}

void expect_equal(const Gradients& got, const Gradients& want) {
  ASSERT_EQ(got.parameters.size(), want.parameters.size());
  EXPECT_TRUE(torch::equal(got.loss, want.loss));
  for (size_t i = 0; i < got.parameters.size(); ++i)
    EXPECT_TRUE(torch::equal(got.parameters[i], want.parameters[i])) << "parameter " << i;
}

// With dropout and drop-path on, every residual add already runs apart from
// the next norm, so the checkpointed blocks run the very same kernels: the
// gradients are equal to the bit. A recompute with other masks would give
// other gradients (the draws differ between calls, as the last check shows).
TEST(GradCheckpointing, WithDropoutAndDropPathGivesTheSameGradientsBitForBit) {
  const auto cfg = stochastic_three_blocks();
  const auto plain = gradients_of(cfg, 0);
  expect_equal(gradients_of(cfg, 1), plain);
  expect_equal(gradients_of(cfg, 2), plain);  // blocks 0 and 2
  expect_equal(gradients_of(cfg, 3), plain);  // block 0 alone
  // The masks matter: other draws give other gradients.
  auto model = testing::seeded_model(cfg, 11);
  model->train();
  torch::manual_seed(12);
  const auto images = torch::randn({4, 3, 16, 16});
  torch::manual_seed(14);
  EXPECT_FALSE(torch::equal(model->forward(images).pow(2).mean(), plain.loss));
}

// Without dropout, a block's last add and the next block's norm1 run in one
// pass (kernels/residual_norm) except across a checkpointed block's edge:
// fp32's rounding of the two ways, about 1e-7 relative, so within 1e-5 of
// each tensor's largest gradient.
TEST(GradCheckpointing, WithoutDropoutGivesTheSameGradientsToFp32) {
  const auto cfg = three_blocks();
  const auto plain = gradients_of(cfg, 0);
  for (const int64_t every : {1, 2}) {
    const auto checkpointed = gradients_of(cfg, every);
    EXPECT_NEAR(checkpointed.loss.item<double>(), plain.loss.item<double>(),
                1e-6 * plain.loss.item<double>());
    for (size_t i = 0; i < plain.parameters.size(); ++i) {
      const double scale = plain.parameters[i].abs().max().item<double>();
      EXPECT_LE((checkpointed.parameters[i] - plain.parameters[i]).abs().max().item<double>(),
                1e-5 * scale + 1e-12)
          << "every " << every << ", parameter " << i;
    }
  }
}

// Under bf16 autocast the recompute runs in bf16 as the forward pass did: the
// gradients equal those without checkpointing, with dropout on (the same
// kernels, as above).
TEST(GradCheckpointing, RecomputesUnderTheForwardPassesAutocast) {
  const auto cfg = stochastic_three_blocks();
  expect_equal(gradients_of(cfg, 1, Precision::kBf16), gradients_of(cfg, 0, Precision::kBf16));
}

// Checkpointing is for training: in eval mode, or with gradients off, the
// blocks run as usual.
TEST(GradCheckpointing, LeavesEvaluationAlone) {
  const auto cfg = three_blocks();
  auto model = testing::seeded_model(cfg, 11);
  const auto images = torch::randn({2, 3, 16, 16});
  const auto plain = model->forward(images);
  model->set_grad_checkpointing(GradCheckpointing{1});
  EXPECT_TRUE(torch::equal(model->forward(images), plain));
  model->train();
  torch::NoGradGuard no_grad;
  EXPECT_TRUE(torch::equal(model->forward(images), plain));
}

}  // namespace
}  // namespace vit
