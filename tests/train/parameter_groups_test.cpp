// Which parameters decay, and how they are grouped.
#include <tuple>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "synthetic.hpp"
#include "vit/train/parameter_groups.hpp"

namespace vit {
namespace {

TEST(ParameterGroups, WeightDecayOnlyOnWeightMatrices) {
  VisionTransformer model(testing::texture_config().model);  // one block
  TrainConfig t;
  t.weight_decay = 0.07;
  const auto groups = parameter_groups(model, t);
  ASSERT_EQ(groups.size(), 2u);
  EXPECT_EQ(groups[0].name, "decay");
  EXPECT_DOUBLE_EQ(groups[0].weight_decay, 0.07);
  // The patch projection, the block's qkv, proj, fc1 and fc2, and the head, in
  // the model's order.
  EXPECT_EQ(groups[0].names,
            (std::vector<std::string>{"patch_embed.proj.weight", "blocks.0.attn.qkv.weight",
                                      "blocks.0.attn.proj.weight", "blocks.0.mlp.fc1.weight",
                                      "blocks.0.mlp.fc2.weight", "head.weight"}));
  // Everything else: the conv bias, cls_token, pos_embed, the block's 2 norms x 2
  // and 4 biases, the final norm x 2 and the head bias.
  EXPECT_EQ(groups[1].name, "no_decay");
  EXPECT_DOUBLE_EQ(groups[1].weight_decay, 0.0);
  EXPECT_EQ(groups[1].parameters.size(), 1u + 2 + 8 + 2 + 1);
  EXPECT_TRUE(groups[0].parameters[1].is_same(model->blocks[0]->as<Block>()->attn->qkv->weight));
  for (const auto& g : groups)
    EXPECT_DOUBLE_EQ(g.lr_scale, 1.0);
  EXPECT_FALSE(decays("pos_embed", model->pos_embed));
  EXPECT_FALSE(decays("cls_token", model->cls_token));
  EXPECT_FALSE(decays("norm.weight", model->norm->weight));
}

TEST(ParameterGroups, FrozenParametersAreLeftOut) {
  VisionTransformer model(testing::texture_config().model);
  for (auto& p : model->named_parameters())
    if (p.key().rfind("head.", 0) != 0) p.value().set_requires_grad(false);
  const auto groups = parameter_groups(model, TrainConfig{});
  ASSERT_EQ(groups.size(), 2u);
  EXPECT_EQ(groups[0].names, std::vector<std::string>{"head.weight"});
  EXPECT_EQ(groups[1].names, std::vector<std::string>{"head.bias"});
}

// One block, layer_decay 0.5, head x 4, worked by hand: the embeddings train
// at 0.5^2, the block at 0.5, the final norm at 1 and the head at 4.
TEST(ParameterGroups, LayerDecayAndHeadScaleSplitTheGroupsByLearningRate) {
  VisionTransformer model(testing::texture_config().model);
  TrainConfig t;
  t.weight_decay = 0.07;
  t.layer_decay = 0.5;
  t.head_lr_scale = 4.0;
  const auto groups = parameter_groups(model, t);
  std::vector<std::tuple<std::string, double, double, size_t>> got;
  for (const auto& g : groups)
    got.emplace_back(g.name, g.lr_scale, g.weight_decay, g.names.size());
  using Row = std::tuple<std::string, double, double, size_t>;
  EXPECT_EQ(got, (std::vector<Row>{
                     Row{"decay, lr x0.25", 0.25, 0.07, 1}, Row{"decay, lr x0.5", 0.5, 0.07, 4},
                     Row{"decay, lr x4", 4.0, 0.07, 1}, Row{"no_decay, lr x0.25", 0.25, 0.0, 3},
                     Row{"no_decay, lr x0.5", 0.5, 0.0, 8}, Row{"no_decay", 1.0, 0.0, 2},
                     Row{"no_decay, lr x4", 4.0, 0.0, 1}}));
  EXPECT_EQ(groups[3].names,
            (std::vector<std::string>{"cls_token", "pos_embed", "patch_embed.proj.bias"}));
  EXPECT_EQ(groups[5].names, (std::vector<std::string>{"norm.weight", "norm.bias"}));
}

}  // namespace
}  // namespace vit
