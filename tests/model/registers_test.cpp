// Register tokens (model.registers; Darcet et al., 2024, as timm's register
// models): [class, registers, patches], a position embedding of the patches
// alone, never pooled; and the analyses that take the prefix count from the
// model. timm itself: PyCheck.TimmRegisterModelsGiveTimmsLogits.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "../weights/small_model.hpp"
#include "error_of.hpp"
#include "vit/analysis/attention_distance.hpp"
#include "vit/analysis/attention_maps.hpp"
#include "vit/analysis/logit_lens.hpp"
#include "vit/analysis/pos_embed_similarity.hpp"
#include "vit/analysis/rollout.hpp"
#include "vit/config.hpp"
#include "vit/weights/checkpoint.hpp"
#include "vit/weights/pos_embed_resize.hpp"

namespace vit::registers_test {
namespace {

constexpr int64_t kRegisters = 3;

ModelConfig with_registers(Pool pool = Pool::kCls) {
  ModelConfig m = testing::small_config().model;  // 16 px in 4 px patches: 16 patches, D 32
  m.registers = kRegisters;
  m.pool = pool;
  return m;
}

torch::Tensor images() {
  torch::manual_seed(5);
  return torch::randn({2, 3, 16, 16});
}

TEST(Registers, SitAfterTheClassTokenWithPositionsForThePatchesAlone) {
  const ModelConfig m = with_registers();
  EXPECT_EQ(m.prefix_tokens(), 4);
  EXPECT_EQ(m.tokens(), 20);
  VisionTransformer model = testing::seeded_model(m, 1);
  EXPECT_EQ(model->reg_token.sizes(), torch::IntArrayRef({1, kRegisters, 32}));
  EXPECT_EQ(model->pos_embed.sizes(), torch::IntArrayRef({1, 16, 32}));
  torch::NoGradGuard no_grad;
  const auto x = images();
  const auto tokens = model->embed(x);  // (2, 20, 32)
  ASSERT_EQ(tokens.sizes(), torch::IntArrayRef({2, 20, 32}));
  EXPECT_TRUE(torch::equal(tokens[1][0], model->cls_token[0][0]));  // no position
  EXPECT_TRUE(torch::equal(tokens[1].slice(0, 1, 4), model->reg_token[0]));
  EXPECT_TRUE(torch::allclose(tokens.slice(1, 4), model->patch_embed(x) + model->pos_embed));
  // Without registers, the class token keeps its position row (the layout before).
  VisionTransformer plain = testing::seeded_model(testing::small_config().model, 1);
  EXPECT_EQ(plain->pos_embed.sizes(), torch::IntArrayRef({1, 17, 32}));
  EXPECT_FALSE(plain->reg_token.defined());
}

TEST(Registers, CountInTheParametersAndTheFlopsButNotInThePooling) {
  for (const Pool pool : {Pool::kCls, Pool::kMean}) {
    const ModelConfig m = with_registers(pool);
    VisionTransformer model = testing::seeded_model(m, 2);
    int64_t parameters = 0;
    for (const auto& p : model->parameters())
      parameters += p.numel();
    EXPECT_EQ(count_parameters(m), parameters);
    ModelConfig none = m;
    none.registers = 0;
    // Three more tokens in every block's products: qkv and proj (4 D^2 a
    // token), QK^T and AV (2 N D each way), the MLP (2 D M).
    const int64_t D = 32, M = 64, N = 20, N0 = 17;
    EXPECT_EQ(forward_flops(m) - forward_flops(none),
              2 * (3 * (4 * D * D + 2 * D * M) + 2 * (N * N - N0 * N0) * D));
    torch::NoGradGuard no_grad;
    const auto tokens = model->forward_features(images());
    const auto pooled = model->pool(tokens);
    const auto want = pool == Pool::kCls ? tokens.select(1, 0) : tokens.slice(1, 4).mean(1);
    EXPECT_TRUE(torch::equal(pooled, want)) << enum_name(pool);
    EXPECT_TRUE(torch::allclose(model->forward(images()), model->forward_head(tokens), 1e-5, 1e-6));
  }
}

TEST(Registers, ACheckpointOfAnotherCountIsAnotherArchitecture) {
  ModelConfig none = with_registers();
  none.registers = 0;
  EXPECT_EQ(architecture_differences(with_registers(), none),
            (std::vector<std::string>{"registers 3 vs 0", "no_embed_class 1 vs 0"}));
}

// Attention of 20 tokens where the registers draw most of it: the maps must
// leave them out and still come out as the patches' grid.
std::vector<torch::Tensor> attention_to_registers() {
  torch::manual_seed(9);
  auto a = torch::rand({1, 2, 20, 20});
  a.slice(3, 1, 4).mul_(50);  // the registers' columns
  return {a / a.sum(-1, /*keepdim=*/true)};
}

TEST(Registers, RolloutAndAttentionMapsShowThePatchesAlone) {
  const auto attention = attention_to_registers();
  RolloutOptions options;
  options.prefix_tokens = 4;
  options.source = RolloutSource::kPatchMean;
  const auto masks = rollout_masks(attention, options);  // (1, 4, 4)
  ASSERT_EQ(masks.sizes(), torch::IntArrayRef({1, 4, 4}));
  // w^T (rownorm(A_fused + I)) over the patch rows, patch columns, by hand.
  auto fused = attention[0].mean(1)[0] + torch::eye(20);
  fused = fused / fused.sum(-1, true);
  auto want = fused.slice(0, 4).mean(0).slice(0, 4);
  EXPECT_TRUE(torch::allclose(masks[0].flatten(), want / want.max(), 1e-5, 1e-6));
  // 20 tokens are not 1 + g*g: the count must come from the model.
  EXPECT_NE(testing::error_of([&] { rollout_masks(attention); }).find("20 tokens is not 1 + g*g"),
            std::string::npos);
  // Patch (1, 2)'s row is token 4 + 1*4 + 2 = 10.
  AttentionQuery query;
  query.kind = AttentionQuery::Kind::kPatch;
  query.row = 1;
  query.column = 2;
  const auto maps = attention_query_maps(attention, query, 4);  // (1, 1, 2, 4, 4)
  EXPECT_TRUE(torch::allclose(maps[0][0][1].flatten(), attention[0][0][1][10].slice(0, 4)));
}

TEST(Registers, AttentionDistanceLeavesTheRegistersOut) {
  const auto attention = attention_to_registers();
  const auto distance = mean_attention_distance(attention, /*patch_size=*/4, false, 4);
  // By hand: the patch rows' weights on the patch columns, times the distances.
  const auto w = attention[0][0][0].slice(0, 4).slice(1, 4).to(torch::kDouble);  // head 0
  const auto d = patch_distance_matrix(4, 4, torch::kDouble);
  EXPECT_NEAR(distance[0][0][0].item<double>(), (w * d).sum().item<double>() / 16, 1e-5);
}

TEST(Registers, TheLensReportsTheirNormsApart) {
  auto layer = torch::ones({2, 20, 8});
  layer.slice(1, 1, 4).mul_(10);  // registers: norm 10 sqrt(8)
  EXPECT_TRUE(torch::allclose(patch_token_norms(layer, 4), torch::full({32}, std::sqrt(8.0))));
  EXPECT_TRUE(torch::allclose(register_token_norms(layer, kRegisters),
                              torch::full({6}, 10 * std::sqrt(8.0))));
}

TEST(Registers, PositionEmbeddingsWithoutAClassRowResizeAndCompare) {
  torch::manual_seed(4);
  const auto pos = torch::randn({1, 16, 8});  // a register model's: patches alone
  EXPECT_EQ(pos_embed_grid(pos, 0), 4);
  const auto resized = resize_pos_embed(pos, 6, 0);
  EXPECT_EQ(resized.sizes(), torch::IntArrayRef({1, 36, 8}));
  // The same grid through the class-token layout gives the same patches.
  const auto with_class = torch::cat({torch::zeros({1, 1, 8}), pos}, 1);
  EXPECT_TRUE(torch::allclose(resize_pos_embed(with_class, 6).slice(1, 1), resized));
  EXPECT_TRUE(torch::allclose(pos_embed_similarity(pos, 0), pos_embed_similarity(with_class)));
  EXPECT_NE(testing::error_of([&] { pos_embed_grid(pos); }).find("15 patch tokens"),
            std::string::npos);
}

}  // namespace
}  // namespace vit::registers_test
