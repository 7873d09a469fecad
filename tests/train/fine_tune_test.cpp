#include "vit/train/fine_tune.hpp"

#include <map>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "synthetic.hpp"
#include "vit/train/optimizer.hpp"
#include "vit/weights/safetensors.hpp"

namespace vit {
namespace {

TrainConfig with(const std::string& freeze, double layer_decay = 1.0, double head_scale = 1.0) {
  TrainConfig t;
  t.freeze = freeze;
  t.layer_decay = layer_decay;
  t.head_lr_scale = head_scale;
  return t;
}

TEST(LayerIndex, EmbeddingsBlocksThenNormAndHead) {
  const int64_t depth = 12;
  EXPECT_EQ(layer_index("patch_embed.proj.weight", depth), 0);
  EXPECT_EQ(layer_index("cls_token", depth), 0);
  EXPECT_EQ(layer_index("pos_embed", depth), 0);
  EXPECT_EQ(layer_index("blocks.0.norm1.weight", depth), 1);
  EXPECT_EQ(layer_index("blocks.11.mlp.fc2.bias", depth), 12);
  EXPECT_EQ(layer_index("norm.weight", depth), 13);
  EXPECT_EQ(layer_index("head.bias", depth), 13);
}

// depth 3, layer_decay 0.5, head x 10, worked by hand: scale = 0.5^(4 - layer).
TEST(LrScale, MatchesTheHandComputedTable) {
  const TrainConfig t = with("none", 0.5, 10.0);
  const std::vector<std::pair<std::string, double>> table = {{"patch_embed.proj.weight", 0.0625},
                                                             {"cls_token", 0.0625},
                                                             {"pos_embed", 0.0625},
                                                             {"blocks.0.attn.qkv.weight", 0.125},
                                                             {"blocks.1.norm2.bias", 0.25},
                                                             {"blocks.2.mlp.fc1.weight", 0.5},
                                                             {"norm.weight", 1.0},
                                                             {"head.weight", 10.0},
                                                             {"head.bias", 10.0}};
  for (const auto& [name, scale] : table)
    EXPECT_DOUBLE_EQ(lr_scale(name, /*depth=*/3, t), scale) << name;
}

TEST(LrScale, DefaultsLeaveEveryParameterAtTheScheduleRate) {
  for (const char* name : {"pos_embed", "blocks.5.attn.proj.weight", "head.weight"})
    EXPECT_DOUBLE_EQ(lr_scale(name, /*depth=*/6, TrainConfig{}), 1.0) << name;
}

TEST(IsFrozen, NoneBackboneAndTheFirstNBlocks) {
  const std::vector<std::string> names = {"patch_embed.proj.weight",
                                          "pos_embed",
                                          "blocks.0.norm1.weight",
                                          "blocks.1.attn.qkv.weight",
                                          "blocks.2.mlp.fc2.bias",
                                          "norm.weight",
                                          "head.weight"};
  const auto frozen = [&](const std::string& freeze) {
    std::vector<bool> out;
    for (const auto& name : names)
      out.push_back(is_frozen(name, /*depth=*/3, with(freeze)));
    return out;
  };
  EXPECT_EQ(frozen("none"), (std::vector<bool>{0, 0, 0, 0, 0, 0, 0}));
  EXPECT_EQ(frozen("backbone"), (std::vector<bool>{1, 1, 1, 1, 1, 1, 0}));
  EXPECT_EQ(frozen("0"), (std::vector<bool>{1, 1, 0, 0, 0, 0, 0}));
  EXPECT_EQ(frozen("2"), (std::vector<bool>{1, 1, 1, 1, 0, 0, 0}));
  EXPECT_EQ(frozen("3"), (std::vector<bool>{1, 1, 1, 1, 1, 0, 0}));
}

TEST(FreezeParameters, TurnsOffGradientsOfTheFrozenOnly) {
  ModelConfig m;
  m.image_size = 8;
  m.patch_size = 4;
  m.dim = 8;
  m.depth = 2;
  m.heads = 2;
  m.mlp_dim = 16;
  VisionTransformer model(m);
  const auto frozen = freeze_parameters(model, with("1"));
  // cls_token, pos_embed, the patch kernel and bias, and block 0's 12 tensors.
  EXPECT_EQ(frozen.size(), 16u);
  EXPECT_EQ(frozen.front(), "cls_token");  // the model's own tensors come first
  EXPECT_EQ(frozen.back(), "blocks.0.mlp.fc2.bias");
  for (const auto& p : model->named_parameters())
    EXPECT_EQ(p.value().requires_grad(), !is_frozen(p.key(), 2, with("1"))) << p.key();
}

TEST(FreezeParameters, FrozenParametersDoNotMoveInAnOptimizerStep) {
  const Config c = testing::texture_config();
  torch::manual_seed(0);
  VisionTransformer model(c.model);
  TrainConfig t = c.train;
  t.freeze = "1";        // the embeddings and the only block: only the final norm and head train
  t.weight_decay = 0.5;  // decay alone would move a frozen weight that the optimizer kept
  freeze_parameters(model, t);
  auto optimizer = make_optimizer(model, t);
  TensorMap before;
  for (const auto& p : model->named_parameters())
    before.emplace(p.key(), p.value().detach().clone());
  const auto batch = testing::texture_dataset(16, 1);
  const auto images = (batch.images.to(torch::kFloat) / 255.0 - 0.3) / 0.3;
  optimizer->zero_grad();
  torch::nn::functional::cross_entropy(model->forward(images), batch.labels).backward();
  optimizer->step(/*lr=*/1e-2);
  for (const auto& p : model->named_parameters()) {
    const bool moved = !torch::equal(p.value(), before.at(p.key()));
    EXPECT_EQ(moved, !is_frozen(p.key(), c.model.depth, t)) << p.key();
  }
}

}  // namespace
}  // namespace vit
