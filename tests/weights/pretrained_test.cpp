#include "vit/weights/pretrained.hpp"

#include <chrono>
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "error_of.hpp"
#include "small_model.hpp"
#include "vit/train/optimizer.hpp"
#include "vit/train/training_checkpoint.hpp"
#include "vit/weights/patch_embed_resize.hpp"
#include "vit/weights/pos_embed_resize.hpp"
#include "vit/weights/timm_layout.hpp"

namespace vit {
namespace {

namespace fs = std::filesystem;
using testing::error_of;

using testing::seeded_model;
using testing::small_config;

torch::Tensor images(int64_t channels, int64_t side) {
  torch::manual_seed(123);
  return torch::randn({2, channels, side, side});
}

class PretrainedTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("vit_pretrained_test_" +
            std::to_string(std::chrono::steady_clock::now().time_since_epoch().count()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // The pretrained model: seed 0 with small_config(), its head made non-zero.
  VisionTransformer pretrained() const { return seeded_model(config_.model, /*seed=*/0); }

  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  fs::path dir_;
  Config config_ = small_config();
};

TEST_F(PretrainedTest, OwnSafetensorsExportGivesIdenticalLogits) {
  auto source = pretrained();
  save_safetensors_weights(path("w.safetensors"), source, config_);
  auto model = seeded_model(config_.model, /*seed=*/7);
  const auto report =
      init_from_pretrained(model, read_pretrained_tensors(path("w.safetensors")), "w.safetensors");
  EXPECT_EQ(report.loaded.size(), model->named_parameters().size());
  EXPECT_TRUE(report.adapted.empty());
  EXPECT_TRUE(report.reinitialised.empty());
  EXPECT_TRUE(report.unused.empty());
  const auto x = images(3, 16);
  EXPECT_TRUE(torch::equal(model->forward(x), source->forward(x)));
}

TEST_F(PretrainedTest, OwnPtCheckpointGivesIdenticalLogits) {
  auto source = pretrained();
  const auto optimizer = make_optimizer(source, config_.train);
  CheckpointMeta meta;
  meta.config = config_;
  meta.class_names = {"a", "b", "c", "d", "e"};
  save_training_checkpoint(path("best.pt"), source, *optimizer, meta);
  auto model = seeded_model(config_.model, /*seed=*/7);
  init_from_pretrained(model, read_pretrained_tensors(path("best.pt")), "best.pt",
                       {/*strict=*/true, /*new_head=*/false});
  const auto x = images(3, 16);
  EXPECT_TRUE(torch::equal(model->forward(x), source->forward(x)));
}

TEST_F(PretrainedTest, AnotherNumberOfClassesGetsAZeroHeadAndKeepsTheRest) {
  auto source = pretrained();
  Config target = config_;
  target.model.num_classes = 3;
  auto model = seeded_model(target.model, /*seed=*/7);
  const auto report = init_from_pretrained(model, state_tensors(source), "w.safetensors");
  EXPECT_TRUE(torch::equal(model->head->weight, torch::zeros({3, 32})));
  EXPECT_TRUE(torch::equal(model->head->bias, torch::zeros({3})));
  EXPECT_TRUE(torch::equal(model->pos_embed, source->pos_embed));
  EXPECT_TRUE(torch::equal(model->blocks[1]->as<Block>()->mlp->fc2->weight,
                           source->blocks[1]->as<Block>()->mlp->fc2->weight));
  EXPECT_EQ(report.reinitialised,
            (std::vector<std::string>{
                "head.weight [3, 32] (zeros: the file's is [5, 32], another number of classes)",
                "head.bias [3] (zeros: the file's is [5], another number of classes)"}));
  EXPECT_EQ(report.loaded.size(), model->named_parameters().size() - 2);
  // A zero head predicts uniformly: every logit is 0.
  EXPECT_TRUE(torch::equal(model->forward(images(3, 16)), torch::zeros({2, 3})));
}

TEST_F(PretrainedTest, NewHeadZeroesAHeadOfTheSameSize) {
  auto model = seeded_model(config_.model, /*seed=*/7);
  const auto report = init_from_pretrained(model, state_tensors(pretrained()), "w.safetensors",
                                           {/*strict=*/true, /*new_head=*/true});
  EXPECT_TRUE(torch::equal(model->head->weight, torch::zeros({5, 32})));
  EXPECT_EQ(report.reinitialised.front(),
            "head.weight [5, 32] (zeros: a new head, train.init_new_head)");
}

TEST_F(PretrainedTest, AHeadlessFileGivesAZeroHead) {
  auto state = state_tensors(pretrained());
  state.erase("head.weight");
  state.erase("head.bias");
  auto model = seeded_model(config_.model, /*seed=*/7);
  const auto report = init_from_pretrained(model, state, "w.safetensors");
  EXPECT_TRUE(torch::equal(model->head->weight, torch::zeros({5, 32})));
  EXPECT_EQ(report.reinitialised,
            (std::vector<std::string>{"head.weight [5, 32] (zeros: not in the file)",
                                      "head.bias [5] (zeros: not in the file)"}));
}

TEST_F(PretrainedTest, AnotherImageSizeResizesThePositionEmbedding) {
  auto source = pretrained();
  Config target = config_;
  target.model.image_size = 32;  // g = 8
  auto model = seeded_model(target.model, /*seed=*/7);
  const auto report = init_from_pretrained(model, state_tensors(source), "w.safetensors");
  EXPECT_TRUE(torch::equal(model->pos_embed, resize_pos_embed(source->pos_embed, 8)));
  EXPECT_EQ(report.adapted,
            (std::vector<std::string>{"pos_embed: [1, 17, 32] -> [1, 65, 32] (grid 4x4 -> 8x8, "
                                      "2-D bicubic interpolation, class token kept)"}));
  EXPECT_TRUE(report.reinitialised.empty());
}

// A register model's pos_embed has no class-token row: it resizes as the
// patches' grid alone, and a layout that differs (registers on one side
// only) is reinitialised, never reshaped into the other.
TEST_F(PretrainedTest, RegisterModelsResizeThePatchPositionsAloneAndOtherLayoutsReinitialise) {
  Config registers = config_;
  registers.model.registers = 2;
  auto source = seeded_model(registers.model, /*seed=*/0);
  Config larger = registers;
  larger.model.image_size = 32;  // g = 8
  auto model = seeded_model(larger.model, /*seed=*/7);
  auto report = init_from_pretrained(model, state_tensors(source), "w.safetensors");
  EXPECT_TRUE(torch::equal(model->pos_embed, resize_pos_embed(source->pos_embed, 8, 0)));
  EXPECT_TRUE(torch::equal(model->reg_token, source->reg_token));
  EXPECT_EQ(report.adapted,
            (std::vector<std::string>{"pos_embed: [1, 16, 32] -> [1, 64, 32] (grid 4x4 -> 8x8, "
                                      "2-D bicubic interpolation)"}));
  EXPECT_TRUE(report.reinitialised.empty());

  auto plain = seeded_model(config_.model, /*seed=*/7);
  const auto before = plain->pos_embed.clone();
  report = init_from_pretrained(plain, state_tensors(source), "w.safetensors");
  EXPECT_TRUE(torch::equal(plain->pos_embed, before));
  EXPECT_EQ(report.reinitialised,
            (std::vector<std::string>{"pos_embed [1, 17, 32] (the file's is [1, 16, 32]; "
                                      "initialised as from scratch)"}));
  EXPECT_EQ(report.unused, (std::vector<std::string>{"reg_token [1, 2, 32]"}));
}

TEST_F(PretrainedTest, AnotherPatchSizeResizesTheKernelSoUpsampledPatchesGiveTheSameTokens) {
  auto source = pretrained();
  Config target = config_;
  target.model.image_size = 32;
  target.model.patch_size = 8;  // the same 4x4 grid at twice the resolution
  auto model = seeded_model(target.model, /*seed=*/7);
  const auto report = init_from_pretrained(model, state_tensors(source), "w.safetensors");
  EXPECT_EQ(report.adapted, (std::vector<std::string>{
                                "patch_embed.proj.weight: [32, 3, 4, 4] -> [32, 3, 8, 8] (patch 4 "
                                "-> 8, FlexiViT pseudo-inverse resize)"}));
  // The identity is per patch: one 4 px patch enlarged on its own to 8 px. (A
  // whole image enlarged at once also mixes neighbouring patches at the seams.)
  namespace F = torch::nn::functional;
  const auto x = images(3, 4);  // (2, 3, 4, 4): one patch each
  const auto upsampled = F::interpolate(x, F::InterpolateFuncOptions()
                                               .size(std::vector<int64_t>{8, 8})
                                               .mode(torch::kBilinear)
                                               .align_corners(false));
  const auto tokens = source->patch_embed->forward(x);
  EXPECT_TRUE(torch::allclose(model->patch_embed->forward(upsampled), tokens, 1e-4, 1e-4));
  // Plain bilinear resizing of the kernel would not: its tokens are far off.
  const auto naive =
      F::interpolate(source->patch_embed->proj->weight, F::InterpolateFuncOptions()
                                                            .size(std::vector<int64_t>{8, 8})
                                                            .mode(torch::kBilinear)
                                                            .align_corners(false));
  const auto naive_tokens =
      F::conv2d(upsampled, naive,
                F::Conv2dFuncOptions().bias(source->patch_embed->proj->bias).stride(8))
          .flatten(2)
          .transpose(1, 2);
  EXPECT_GT((naive_tokens - tokens).abs().max().item<double>(), 0.1);
}

TEST_F(PretrainedTest, RgbWeightsInAGrayModelEmbedGrayImagesAsBefore) {
  auto source = pretrained();
  Config target = config_;
  target.model.channels = 1;
  auto model = seeded_model(target.model, /*seed=*/7);
  const auto report = init_from_pretrained(model, state_tensors(source), "w.safetensors");
  EXPECT_EQ(report.adapted.front(),
            "patch_embed.proj.weight: [32, 3, 4, 4] -> [32, 1, 4, 4] (3 -> 1 channels, as timm's "
            "adapt_input_conv)");
  const auto gray = images(1, 16);
  EXPECT_TRUE(torch::allclose(model->forward(gray), source->forward(gray.expand({2, 3, 16, 16})),
                              1e-5, 1e-5));
}

TEST_F(PretrainedTest, DeeperModelKeepsItsExtraBlockAndShallowerOneLeavesTensorsUnused) {
  Config deeper = config_;
  deeper.model.depth = 3;
  auto model = seeded_model(deeper.model, /*seed=*/7);
  const auto before = model->blocks[2]->as<Block>()->attn->qkv->weight.clone();
  const auto report = init_from_pretrained(model, state_tensors(pretrained()), "w.safetensors");
  EXPECT_TRUE(torch::equal(model->blocks[2]->as<Block>()->attn->qkv->weight, before));
  EXPECT_EQ(report.reinitialised.size(),
            12u);  // norm1 (2), qkv (2), proj (2), norm2 (2), fc1 (2), fc2 (2)
  EXPECT_EQ(report.reinitialised.front(),
            "blocks.2.norm1.weight [32] (not in the file; initialised as from scratch)");

  auto deep_source = seeded_model(deeper.model, /*seed=*/1);
  auto shallow = seeded_model(config_.model, /*seed=*/7);
  const auto unused = init_from_pretrained(shallow, state_tensors(deep_source), "w.safetensors");
  EXPECT_EQ(unused.unused.size(), 12u);
  EXPECT_EQ(unused.unused.front(), "blocks.2.attn.proj.bias [32]");  // the map's order
}

TEST_F(PretrainedTest, StrictRejectsEveryTensorThatDoesNotLoadAsItIs) {
  Config target = config_;
  target.model.num_classes = 3;
  auto model = seeded_model(target.model, /*seed=*/7);
  auto state = state_tensors(pretrained());
  state.emplace("fc_norm.weight", torch::ones({32}));
  const auto head_before = model->head->weight.clone();
  EXPECT_EQ(error_of([&] {
              init_from_pretrained(model, state, "w.safetensors", {/*strict=*/true, false});
            }),
            "w.safetensors: train.init_strict is set and 3 tensors do not load as they are: "
            "head.weight [3, 32] (zeros: the file's is [5, 32], another number of classes); "
            "head.bias [3] (zeros: the file's is [5], another number of classes); "
            "fc_norm.weight [32] (in the file, not in the model)");
  EXPECT_TRUE(torch::equal(model->head->weight, head_before));  // nothing copied
}

TEST_F(PretrainedTest, AnotherEmbeddingWidthIsAnErrorNamingBothShapes) {
  Config wide = config_;
  wide.model.dim = 48;
  wide.model.heads = 4;
  auto model = seeded_model(config_.model, /*seed=*/7);
  EXPECT_EQ(error_of([&] {
              init_from_pretrained(model, state_tensors(seeded_model(wide.model, 0)), "w.pt");
            }),
            "w.pt: embedding width differs: the file's cls_token is [1, 1, 48], the model's is "
            "[1, 1, 32] (model.dim 32; fine-tuning keeps the width, so the config needs "
            "model.dim 48)");
}

TEST_F(PretrainedTest, AFileWithoutViTTensorsIsNotACheckpoint) {
  auto model = seeded_model(config_.model, /*seed=*/7);
  EXPECT_EQ(error_of([&] {
              init_from_pretrained(model, {{"conv1.weight", torch::zeros({8, 3, 7, 7})}}, "r.st");
            }),
            "r.st: not a ViT checkpoint: none of its 1 tensors has a ViT parameter's name (first: "
            "'conv1.weight'; expected timm's names: patch_embed.proj.weight, cls_token, "
            "pos_embed, blocks.0.attn.qkv.weight, ..., head.weight)");
  EXPECT_EQ(error_of([&] { init_from_pretrained(model, {}, "r.st"); }),
            "r.st: not a ViT checkpoint: it holds no tensors");
}

TEST_F(PretrainedTest, ReadingRejectsFilesThatAreNotCheckpoints) {
  std::ofstream(path("config.json")) << "{\"model\": {}}";
  EXPECT_EQ(error_of([&] { read_pretrained_tensors(path("config.json")); }),
            path("config.json") +
                ": not a checkpoint (expected a vit .pt checkpoint, which is a zip archive, or a "
                "timm .safetensors file)");
  EXPECT_EQ(error_of([&] { read_pretrained_tensors(path("missing.pt")); }),
            path("missing.pt") + ": weights file not found");
}

TEST(PatchKernelResize, SameSizeIsTheIdentityAndBadShapesAreRejected) {
  torch::manual_seed(0);
  const auto kernel = torch::randn({4, 3, 5, 5});
  EXPECT_TRUE(torch::equal(resize_patch_kernel(kernel, 5), kernel));
  EXPECT_EQ(error_of([] {
              resize_patch_kernel(torch::zeros({4, 3, 5, 4}), 8);
            }),
            "patch_embed.proj.weight: shape [4, 3, 5, 4], expected [D, C, P, P]");
}

TEST(PatchKernelResize, BilinearMatrixOfOnePixelIsAllOnes) {
  // A 1x1 patch resized to 3x3 is that pixel everywhere.
  EXPECT_TRUE(torch::equal(bilinear_resize_matrix(1, 3), torch::ones({9, 1}, torch::kDouble)));
}

}  // namespace
}  // namespace vit
