// timm's VisionTransformer options (LayerScale, no class token, the
// distillation token, norm_pre, fc_norm, the attention pool, the other
// activations, no patch bias), each family's set on a small model: the fast
// and the explicit path agree, every parameter learns, and the counts hold.
// Their numbers against timm itself: tests/pycheck/check_timm_families.py.
#include <map>
#include <string>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "../weights/small_model.hpp"
#include "vit/model/vision_transformer.hpp"

namespace vit {
namespace {

// The weight tests' small ViT: D = 32, 4 heads, 2 blocks, MLP 64, 16x16 RGB
// in 4x4 patches, 5 classes.
ModelConfig small() {
  return testing::small_config().model;
}

std::map<std::string, ModelConfig> families() {
  std::map<std::string, ModelConfig> f;
  ModelConfig dinov2_reg = small();
  dinov2_reg.init_values = 1e-5;
  dinov2_reg.registers = 4;
  f["dinov2-reg4"] = dinov2_reg;
  ModelConfig deit3 = small();
  deit3.init_values = 1e-6;
  deit3.no_embed_class = AutoSwitch::kOn;
  f["deit3"] = deit3;
  ModelConfig clip = small();
  clip.pre_norm = true;
  clip.patch_bias = false;
  clip.act_layer = Activation::kQuickGelu;
  clip.layer_norm_eps = 1e-5;
  f["clip-quickgelu"] = clip;
  ModelConfig siglip = small();
  siglip.class_token = false;
  siglip.pool = Pool::kMap;
  siglip.act_layer = Activation::kGeluTanh;
  f["siglip"] = siglip;
  ModelConfig gap = small();
  gap.class_token = false;
  gap.registers = 1;
  gap.pool = Pool::kMean;
  gap.fc_norm = true;
  gap.init_values = 1e-5;
  f["reg1-gap"] = gap;
  ModelConfig distilled = small();
  distilled.distilled = true;
  f["deit-distilled"] = distilled;
  return f;
}

torch::Tensor images() {
  torch::manual_seed(7);
  return torch::randn({3, 3, 16, 16});
}

// Weights far from their init, so that LayerScale and every norm matter.
void randomize(VisionTransformer& model) {
  torch::manual_seed(11);
  torch::NoGradGuard no_grad;
  for (auto& p : model->parameters())
    p.copy_(torch::randn_like(p) * (p.dim() >= 2 ? 0.3 : 0.5) + (p.dim() == 1 ? 0.5 : 0.0));
}

TEST(ModelOptions, TheFastAndTheExplicitPathGiveTheSameLogits) {
  for (auto& [name, m] : families()) {
    VisionTransformer model(m);
    randomize(model);
    model->eval();
    torch::NoGradGuard no_grad;
    const auto x = images();
    const auto fast = model->forward(x);
    const auto explained = model->forward_with_attention(x);
    ASSERT_EQ(fast.sizes(), (c10::IntArrayRef{3, 5})) << name;
    // fp32 through two blocks: the two paths order their sums differently.
    const double scale = fast.abs().max().item<double>();
    EXPECT_LE((explained.logits - fast).abs().max().item<double>(), 1e-5 * scale) << name;
    EXPECT_TRUE(torch::allclose(model->forward_head(model->forward_features(x)), fast, 1e-5, 1e-5))
        << name;
    ASSERT_EQ(explained.attention.size(), 2u);
    const int64_t N = m.tokens();
    EXPECT_EQ(explained.attention[0].sizes(), (c10::IntArrayRef{3, 4, N, N})) << name;
    // The attention pool's query over the 16 patches (rollout's source for pool map).
    if (m.pool != Pool::kMap) {
      EXPECT_FALSE(explained.pool_attention.defined()) << name;
      continue;
    }
    ASSERT_EQ(explained.pool_attention.sizes(), (c10::IntArrayRef{3, 4, 1, 16})) << name;
    EXPECT_TRUE(torch::allclose(explained.pool_attention.sum(-1), torch::ones({3, 4, 1}), 0, 1e-6));
    // Against the pool on the fast path's features: fp32 probabilities in [0, 1]
    // through two blocks whose paths order their sums differently, as the logits above.
    const auto features = model->forward_features(x);
    const auto fast_pool =
        model->attn_pool->pool(features.slice(1, m.prefix_tokens())).probabilities;
    EXPECT_LE((explained.pool_attention - fast_pool).abs().max().item<double>(), 1e-5) << name;
  }
}

TEST(ModelOptions, EveryParameterLearnsAndIsCounted) {
  for (auto& [name, m] : families()) {
    VisionTransformer model(m);
    randomize(model);
    model->train();
    const auto loss = torch::cross_entropy_loss(model->forward(images()), torch::tensor({0, 3, 4}));
    loss.backward();
    int64_t parameters = 0;
    for (const auto& p : model->named_parameters()) {
      parameters += p.value().numel();
      ASSERT_TRUE(p.value().grad().defined()) << name << " " << p.key();
      EXPECT_GT(p.value().grad().abs().sum().item<double>(), 0.0) << name << " " << p.key();
    }
    EXPECT_EQ(count_parameters(m), parameters) << name;
  }
}

TEST(ModelOptions, EachOptionAddsTimmsTensors) {
  const auto names = [](const ModelConfig& m) {
    std::map<std::string, std::vector<int64_t>> out;
    for (const auto& p : VisionTransformer(m)->named_parameters())
      out[p.key()] = p.value().sizes().vec();
    return out;
  };
  const auto f = families();
  const auto dinov2 = names(f.at("dinov2-reg4"));
  EXPECT_EQ(dinov2.at("blocks.1.ls2.gamma"), (std::vector<int64_t>{32}));
  EXPECT_EQ(dinov2.at("pos_embed"), (std::vector<int64_t>{1, 16, 32}));  // the patches alone
  EXPECT_EQ(names(f.at("deit3")).at("pos_embed"), (std::vector<int64_t>{1, 16, 32}));
  const auto clip = names(f.at("clip-quickgelu"));
  EXPECT_EQ(clip.count("norm_pre.weight"), 1u);
  EXPECT_EQ(clip.count("patch_embed.proj.bias"), 0u);
  const auto siglip = names(f.at("siglip"));
  EXPECT_EQ(siglip.count("cls_token"), 0u);
  EXPECT_EQ(siglip.at("attn_pool.latent"), (std::vector<int64_t>{1, 1, 32}));
  EXPECT_EQ(siglip.at("attn_pool.kv.weight"), (std::vector<int64_t>{64, 32}));
  EXPECT_EQ(siglip.at("attn_pool.mlp.fc1.weight"), (std::vector<int64_t>{64, 32}));
  const auto gap = names(f.at("reg1-gap"));
  EXPECT_EQ(gap.count("norm.weight"), 0u);
  EXPECT_EQ(gap.count("fc_norm.weight"), 1u);
  const auto distilled = names(f.at("deit-distilled"));
  EXPECT_EQ(distilled.at("dist_token"), (std::vector<int64_t>{1, 1, 32}));
  EXPECT_EQ(distilled.at("pos_embed"), (std::vector<int64_t>{1, 18, 32}));  // both prefix rows
  EXPECT_EQ(distilled.at("head_dist.weight"), (std::vector<int64_t>{5, 32}));
}

// x + gamma * f(x) with gamma = 1 is the plain block: the same logits as the
// model without LayerScale, on the same weights.
TEST(ModelOptions, LayerScaleOfOnesIsThePlainBlock) {
  ModelConfig plain = small(), scaled = small();
  scaled.init_values = 1.0;
  VisionTransformer a(plain), b(scaled);
  randomize(a);
  a->eval();
  b->eval();
  torch::NoGradGuard no_grad;
  for (auto& p : b->named_parameters()) {
    const auto* mine = a->named_parameters().find(p.key());
    if (mine)
      p.value().copy_(*mine);
    else
      EXPECT_TRUE(torch::equal(p.value(), torch::ones({32}))) << p.key();
  }
  // Not bit-identical: without LayerScale the branch's last product goes
  // through the fused add, with it the branch is computed apart; fp32 sums in
  // another order.
  EXPECT_TRUE(torch::allclose(a->forward(images()), b->forward(images()), 1e-5, 1e-6));
}

// DeiT at inference: the mean of the class token's head and the distillation
// token's.
TEST(ModelOptions, TheDistilledLogitsAreTheTwoHeadsMean) {
  ModelConfig m = small();
  m.distilled = true;
  VisionTransformer model(m);
  randomize(model);
  model->eval();
  torch::NoGradGuard no_grad;
  const auto features = model->forward_features(images());  // (3, 18, 32)
  const auto cls = torch::linear(features.select(1, 0), model->head->weight, model->head->bias);
  const auto dist =
      torch::linear(features.select(1, 1), model->head_dist->weight, model->head_dist->bias);
  EXPECT_TRUE(torch::allclose(model->forward(images()), (cls + dist) / 2, 1e-5, 1e-6));
}

}  // namespace
}  // namespace vit
