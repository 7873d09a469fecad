#include "vit/model/vision_transformer.hpp"

#include <filesystem>

#include <gtest/gtest.h>
#include <torch/torch.h>

namespace vit {
namespace {

ModelConfig small_config() {
  ModelConfig m;
  m.image_size = 16;
  m.patch_size = 4;
  m.channels = 3;
  m.num_classes = 5;
  m.dim = 32;
  m.depth = 2;
  m.heads = 4;
  m.mlp_dim = 64;
  return m;
}

ModelConfig vit_base() {  // timm's vit_base_patch16_224
  ModelConfig m;
  m.image_size = 224;
  m.patch_size = 16;
  m.dim = 768;
  m.depth = 12;
  m.heads = 12;
  m.mlp_dim = 3072;
  m.num_classes = 1000;
  m.qkv_bias = true;
  return m;
}

TEST(VisionTransformer, LogitsHaveTheRightShapeAndNoNaN) {
  torch::manual_seed(0);
  VisionTransformer model(small_config());
  const auto logits = model->forward(torch::randn({3, 3, 16, 16}));
  EXPECT_EQ(logits.sizes(), (std::vector<int64_t>{3, 5}));
  EXPECT_FALSE(logits.isnan().any().item<bool>());
}

TEST(VisionTransformer, ParameterNamesAreTimms) {
  VisionTransformer model(small_config());
  std::vector<std::string> names;
  for (const auto& p : model->named_parameters()) names.push_back(p.key());
  const std::vector<std::string> expected_start = {
      "cls_token", "pos_embed", "patch_embed.proj.weight", "patch_embed.proj.bias",
      "blocks.0.norm1.weight", "blocks.0.norm1.bias", "blocks.0.attn.qkv.weight", "blocks.0.attn.qkv.bias",
      "blocks.0.attn.proj.weight", "blocks.0.attn.proj.bias", "blocks.0.norm2.weight",
      "blocks.0.norm2.bias", "blocks.0.mlp.fc1.weight", "blocks.0.mlp.fc1.bias", "blocks.0.mlp.fc2.weight",
      "blocks.0.mlp.fc2.bias"};
  ASSERT_GE(names.size(), expected_start.size());
  EXPECT_EQ(std::vector<std::string>(names.begin(), names.begin() + expected_start.size()), expected_start);
  EXPECT_EQ(names[names.size() - 4], "norm.weight");
  EXPECT_EQ(names.back(), "head.bias");
}

int64_t counted(const ModelConfig& m) {
  VisionTransformer model(m);
  int64_t n = 0;
  for (const auto& p : model->parameters()) n += p.numel();
  return n;
}

TEST(VisionTransformer, ExactParameterCountsOfThePresets) {
  ModelConfig base = vit_base();
  base.qkv_bias = false;
  EXPECT_EQ(count_parameters(base), 86540008);
  EXPECT_EQ(count_parameters(vit_base()), 86567656);  // with qkv bias, as timm

  ModelConfig tiny;  // the second seed's vit_tiny
  tiny.image_size = 32;
  tiny.patch_size = 4;
  tiny.dim = 512;
  tiny.depth = 4;
  tiny.heads = 8;
  tiny.mlp_dim = 1024;
  tiny.num_classes = 10;
  tiny.qkv_bias = false;
  EXPECT_EQ(count_parameters(tiny), 8470026);
  EXPECT_EQ(counted(tiny), 8470026);

  ModelConfig odd = small_config();  // dim_head different from dim / heads
  odd.dim_head = 16;
  odd.qkv_bias = false;
  EXPECT_EQ(counted(odd), count_parameters(odd));
}

TEST(VisionTransformer, FlopsOfViTBase) {
  const ModelConfig base = vit_base();
  // Multiply-adds, the convention of the ViT and timm tables (ViT-B/16: "17.6 GFLOPs"):
  // patch 196*768*768 = 115,605,504; per block qkv 197*768*2304 = 348,585,984,
  // QK^T and AV 2*197*197*768 = 59,610,624, proj 197*768*768 = 116,195,328,
  // MLP 2*197*768*3072 = 929,562,624; head 768*1000 = 768,000.
  EXPECT_EQ(forward_flops(base), 115605504 + int64_t{12} * (348585984 + 59610624 + 116195328 + 929562624) + 768000);
  EXPECT_EQ(forward_flops(base), 17563828224);
}

TEST(VisionTransformer, EveryParameterGetsAGradient) {
  torch::manual_seed(0);
  for (const std::string pool : {"cls", "mean"}) {
    auto cfg = small_config();
    cfg.pool = pool;
    VisionTransformer model(cfg);
    auto loss = torch::cross_entropy_loss(model->forward(torch::randn({2, 3, 16, 16})),
                                          torch::tensor({1, 3}));
    loss.backward();
    for (const auto& p : model->named_parameters()) {
      ASSERT_TRUE(p.value().grad().defined()) << pool << " " << p.key();
      EXPECT_GT(p.value().grad().abs().sum().item<double>(), 0.0) << pool << " " << p.key();
    }
  }
}

TEST(VisionTransformer, AttentionRowsSumToOne) {
  torch::manual_seed(1);
  VisionTransformer model(small_config());
  model->eval();
  const auto out = model->forward_with_attention(torch::randn({2, 3, 16, 16}));
  ASSERT_EQ(out.attention.size(), 2u);
  for (const auto& a : out.attention) {
    EXPECT_EQ(a.sizes(), (std::vector<int64_t>{2, 4, 17, 17}));
    EXPECT_TRUE(torch::allclose(a.sum(-1), torch::ones({2, 4, 17}), /*rtol=*/0, /*atol=*/1e-6));
  }
}

TEST(VisionTransformer, FusedAndExplicitAttentionAgree) {
  torch::manual_seed(2);
  VisionTransformer model(small_config());
  model->eval();
  const auto x = torch::randn({4, 3, 16, 16});
  torch::NoGradGuard no_grad;
  const auto fast = model->forward(x);
  const auto explicit_path = model->forward_with_attention(x).logits;
  EXPECT_LT((fast - explicit_path).abs().max().item<double>(), 1e-5);
}

TEST(VisionTransformer, EvalOutputsSurviveSaveAndLoad) {
  auto cfg = small_config();
  cfg.dropout = 0.3;
  cfg.attn_dropout = 0.3;
  cfg.emb_dropout = 0.3;
  torch::manual_seed(3);
  VisionTransformer model(cfg);
  model->eval();
  const auto path = std::filesystem::temp_directory_path() / "vit_model_roundtrip.pt";
  torch::save(model, path.string());
  torch::manual_seed(4);
  VisionTransformer loaded(cfg);
  torch::load(loaded, path.string());
  loaded->eval();
  std::filesystem::remove(path);
  const auto x = torch::randn({2, 3, 16, 16});
  torch::NoGradGuard no_grad;
  EXPECT_TRUE(torch::equal(model->forward(x), loaded->forward(x)));
  EXPECT_TRUE(torch::equal(model->forward(x), model->forward(x)));  // dropout is off in eval
}

TEST(VisionTransformer, InitialisationFollowsTimm) {
  torch::manual_seed(5);
  ModelConfig cfg = small_config();
  cfg.dim = 256;
  cfg.mlp_dim = 512;
  VisionTransformer model(cfg);
  const auto w = model->blocks[0]->as<Block>()->mlp->fc1->weight;
  EXPECT_NEAR(w.std().item<double>(), 0.02 * 0.8796, 0.0005);  // std of N(0, 1) truncated at +-2
  EXPECT_LE(w.abs().max().item<double>(), 0.04 + 1e-7);
  EXPECT_EQ(model->blocks[0]->as<Block>()->mlp->fc1->bias.abs().sum().item<double>(), 0.0);
  EXPECT_TRUE(torch::equal(model->norm->weight, torch::ones({256})));
  EXPECT_LE(model->pos_embed.abs().max().item<double>(), 0.04 + 1e-7);
}

}  // namespace
}  // namespace vit
