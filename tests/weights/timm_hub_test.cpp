#include "vit/weights/timm_hub.hpp"

#include <chrono>
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>
#include <torch/torch.h>
#include <nlohmann/json.hpp>

#include "error_of.hpp"
#include "small_model.hpp"
#include "vit/model/vision_transformer.hpp"
#include "vit/weights/checkpoint.hpp"
#include "vit/weights/safetensors.hpp"
#include "vit/weights/timm_layout.hpp"

namespace vit {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using testing::error_of;

// sum(p.numel() for p in timm.create_model(name, num_classes=1000).parameters()),
// timm 1.0.31, at each architecture's default input size.
TEST(TimmArchitectures, EveryFamilyHasTimmsParameterCount) {
  const std::pair<const char*, int64_t> families[] = {
      {"vit_small_patch16_224", 22'050'664},
      {"vit_small_patch14_dinov2", 22'441'192},
      {"vit_small_patch14_reg4_dinov2", 22'442'344},
      {"deit3_small_patch16_224", 22'059'496},
      {"vit_base_patch16_clip_224", 86'568'424},
      {"vit_base_patch16_clip_quickgelu_224", 86'568'424},
      {"vit_base_patch16_siglip_224", 93'653'224},
      {"vit_medium_patch16_reg4_gap_256", 38'881'768},
      {"deit_small_distilled_patch16_224", 22'436'432}};
  for (const auto& [name, parameters] : families) {
    const ModelConfig m = timm_architecture(name);
    EXPECT_EQ(count_parameters(m), parameters) << name;
  }
  // The options each family is made of.
  const ModelConfig dinov2 = timm_architecture("vit_small_patch14_reg4_dinov2");
  EXPECT_EQ(dinov2.image_size, 518);
  EXPECT_EQ(dinov2.registers, 4);
  EXPECT_TRUE(dinov2.prefix_unembedded());
  EXPECT_DOUBLE_EQ(dinov2.init_values, 1e-5);
  const ModelConfig clip = timm_architecture("vit_base_patch16_clip_quickgelu_224");
  EXPECT_TRUE(clip.pre_norm);
  EXPECT_FALSE(clip.patch_bias);
  EXPECT_EQ(clip.act_layer, Activation::kQuickGelu);
  EXPECT_DOUBLE_EQ(clip.layer_norm_eps, 1e-5);
  const ModelConfig siglip = timm_architecture("vit_base_patch16_siglip_224");
  EXPECT_FALSE(siglip.class_token);
  EXPECT_EQ(siglip.pool, Pool::kMap);
  const ModelConfig gap = timm_architecture("vit_medium_patch16_reg4_gap_256");
  EXPECT_EQ(gap.pool, Pool::kMean);
  EXPECT_TRUE(gap.fc_norm);  // timm's fc_norm None with avg pooling
  EXPECT_EQ(gap.prefix_tokens(), 4);
  EXPECT_TRUE(timm_architecture("deit_small_distilled_patch16_224").distilled);
  EXPECT_EQ(timm_architecture("deit3_small_patch16_224").embedded_prefix(), 0);
}

TEST(TimmArchitectures, EachFamilyIsNamedFromItsOptions) {
  const std::pair<const char*, const char*> families[] = {
      {"vit_base_patch16_224", "ViT"},
      {"deit_small_patch16_224", "ViT"},
      {"deit_tiny_distilled_patch16_224", "DeiT distilled"},
      {"deit3_large_patch16_384", "DeiT III"},
      {"vit_large_patch14_dinov2", "DINOv2"},
      {"vit_base_patch14_reg4_dinov2", "DINOv2 with registers"},
      {"vit_large_patch14_clip_quickgelu_336", "CLIP"},
      {"vit_so400m_patch14_siglip_384", "SigLIP"},
      {"vit_betwixt_patch16_reg4_gap_256", "timm register model"}};
  for (const auto& [name, family] : families)
    EXPECT_EQ(model_family(timm_architecture(name)), family) << name;
  ModelConfig other;
  other.act_layer = Activation::kGeluTanh;
  EXPECT_EQ(model_family(other), "ViT with options");
}

TEST(TimmArchitectures, AnUnknownNameNamesTheClosestKnownOnes) {
  EXPECT_EQ(error_of([] { timm_architecture("vit_small_patch14_dinov3"); }),
            "timm architecture: unknown architecture 'vit_small_patch14_dinov3' (closest known: "
            "vit_small_patch14_dinov2, vit_base_patch14_dinov2, vit_large_patch14_dinov2; "
            "docs/models.md lists the families vit builds)");
}

class TimmHubFolderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("vit_timm_hub_test_" +
            std::to_string(std::chrono::steady_clock::now().time_since_epoch().count()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // What save_for_hf writes for a depth-2, 28 px, 10-class DINOv2-reg4.
  static json dinov2_config() {
    return {{"architecture", "vit_small_patch14_reg4_dinov2"},
            {"num_classes", 10},
            {"global_pool", "token"},
            {"model_args", {{"img_size", {28, 28}}, {"depth", 2}, {"num_classes", 10}}},
            {"pretrained_cfg",
             {{"input_size", {3, 28, 28}},
              {"crop_pct", 1.0},
              {"mean", {0.485, 0.456, 0.406}},
              {"std", {0.229, 0.224, 0.225}}}}};
  }
  void write_config(const json& config) const { std::ofstream(dir_ / "config.json") << config; }
  // The weights of a seeded model of `m` as model.safetensors.
  VisionTransformer write_weights(const ModelConfig& m) const {
    VisionTransformer model = testing::seeded_model(m, /*seed=*/3);
    write_safetensors((dir_ / "model.safetensors").string(), state_tensors(model));
    return model;
  }
  std::string folder() const { return dir_.string(); }

  fs::path dir_;
};

TEST_F(TimmHubFolderTest, OpensWithTheArchitectureModelArgsAndPreprocessingOfItsConfig) {
  write_config(dinov2_config());
  std::ofstream(dir_ / "model.safetensors");  // written below, from the config read here
  const TimmHubFolder hub = read_timm_hub_folder(folder());
  const ModelConfig& m = hub.config.model;
  EXPECT_EQ(hub.architecture, "vit_small_patch14_reg4_dinov2");
  EXPECT_EQ(m.image_size, 28);
  EXPECT_EQ(m.depth, 2);
  EXPECT_EQ(m.num_classes, 10);
  EXPECT_EQ(m.dim, 384);
  EXPECT_EQ(m.registers, 4);
  EXPECT_EQ(hub.config.data.mean, (std::vector<double>{0.485, 0.456, 0.406}));
  EXPECT_DOUBLE_EQ(hub.config.data.crop_pct, 1.0);
  // timm's defaults where pretrained_cfg names neither.
  EXPECT_EQ(hub.config.data.crop_mode, vit::CropMode::kCenter);
  EXPECT_EQ(hub.config.data.interpolation, vit::Interpolation::kBicubic);

  VisionTransformer written = write_weights(m);
  LoadedModel loaded = load_model(folder());
  EXPECT_EQ(loaded.path, folder());
  torch::NoGradGuard no_grad;
  written->eval();
  const auto images = torch::randn({2, 3, 28, 28});
  EXPECT_TRUE(torch::equal(loaded.model->forward(images), written->forward(images)));
}

TEST_F(TimmHubFolderTest, BadFoldersAreOneLineErrors) {
  const std::string f = folder();
  EXPECT_EQ(error_of([&] { read_timm_hub_folder(f); }),
            f + ": not a timm hub folder: no config.json (expected config.json and "
                "model.safetensors, as huggingface-cli download timm/NAME writes them)");
  write_config(dinov2_config());
  EXPECT_EQ(error_of([&] { read_timm_hub_folder(f); }),
            f + ": no model.safetensors beside config.json");
  std::ofstream(dir_ / "pytorch_model.bin") << "pickle";
  EXPECT_NE(error_of([&] {
              read_timm_hub_folder(f);
            }).find(": pytorch_model.bin is a pickle, which vit does not read; convert it"),
            std::string::npos);
  std::ofstream(dir_ / "model.safetensors") << "{";  // truncated
  EXPECT_NE(error_of([&] { load_model(f); }).find((dir_ / "model.safetensors").string() + ": "),
            std::string::npos);

  const std::string where = (dir_ / "config.json").string();
  json config = dinov2_config();
  config["architecture"] = "vit_small_patch16_dinov2";
  write_config(config);
  EXPECT_EQ(error_of([&] { read_timm_hub_folder(f); })
                .rfind(where + ": unknown architecture "
                               "'vit_small_patch16_dinov2' (closest "
                               "known: vit_small_patch14_dinov2",
                       0),
            0u);
  config = dinov2_config();
  config["model_args"]["qk_norm"] = true;
  write_config(config);
  EXPECT_EQ(error_of([&] { read_timm_hub_folder(f); }),
            where +
                " model_args: 'qk_norm' is a timm argument vit does not build (it builds: "
                "timm's VisionTransformer options in docs/models.md)");
  config = dinov2_config();
  config["model_args"]["depth"] = "two";
  write_config(config);
  EXPECT_EQ(error_of([&] { read_timm_hub_folder(f); }),
            where + " model_args: depth is \"two\", expected an integer");
}

// pretrained_cfg's crop_mode and interpolation become data.crop_mode and
// data.interpolation, and export writes them back; the ones vit does not do as
// timm does are one-line errors, not a silently different resize.
TEST_F(TimmHubFolderTest, TheResizeAndCropOfPretrainedCfgRoundTrip) {
  std::ofstream(dir_ / "model.safetensors");
  json config = dinov2_config();
  config["pretrained_cfg"]["crop_mode"] = "squash";
  config["pretrained_cfg"]["interpolation"] = "bilinear";
  config["pretrained_cfg"]["crop_pct"] = 0.95;
  write_config(config);
  const Config read = read_timm_hub_folder(folder()).config;
  EXPECT_EQ(read.data.crop_mode, vit::CropMode::kSquash);
  EXPECT_EQ(read.data.interpolation, vit::Interpolation::kBilinear);
  const json written = vit::timm_hub_config(read)["pretrained_cfg"];
  EXPECT_EQ(written["crop_mode"], "squash");
  EXPECT_EQ(written["interpolation"], "bilinear");
  EXPECT_DOUBLE_EQ(written["crop_pct"].get<double>(), 0.95);

  // A config of vit's own: auto without a random resized crop is the whole
  // image squashed (crop_pct 1); area is written as Pillow's bilinear.
  const json own = vit::timm_hub_config(Config{})["pretrained_cfg"];
  EXPECT_EQ(own["crop_mode"], "squash");
  EXPECT_DOUBLE_EQ(own["crop_pct"].get<double>(), 1.0);
  EXPECT_EQ(own["interpolation"], "bilinear");

  const std::string where = (dir_ / "config.json").string() + " pretrained_cfg";
  config["pretrained_cfg"]["interpolation"] = "nearest";
  write_config(config);
  EXPECT_EQ(error_of([&] { read_timm_hub_folder(folder()); }),
            where + ".interpolation is \"nearest\", expected bilinear or bicubic");
  config["pretrained_cfg"]["interpolation"] = "bicubic";
  config["pretrained_cfg"]["crop_mode"] = "border";
  write_config(config);
  EXPECT_EQ(error_of([&] { read_timm_hub_folder(folder()); }),
            where + ".crop_mode is \"border\", expected center or squash");
}

// timm's fc_norm None follows the pooling (on with avg); an architecture that
// sets it keeps it, whatever global_pool the folder's top level repeats.
TEST_F(TimmHubFolderTest, FcNormFollowsThePoolingOnlyWhereTheArchitectureLeavesItUnset) {
  std::ofstream(dir_ / "model.safetensors");
  const auto fc_norm_of = [&](const std::string& architecture) {
    write_config({{"architecture", architecture},
                  {"global_pool", "avg"},
                  {"model_args", {{"depth", 1}, {"dynamic_img_size", true}}}});
    return read_timm_hub_folder(folder()).config.model.fc_norm;
  };
  EXPECT_TRUE(fc_norm_of("vit_medium_patch16_reg4_gap_256"));
  EXPECT_FALSE(fc_norm_of("vit_so150m_patch16_reg4_gap_256"));  // fc_norm=False in timm
  json config = dinov2_config();
  config["pretrained_cfg"]["mean"] = 0.5;
  write_config(config);
  EXPECT_EQ(
      error_of([&] { read_timm_hub_folder(folder()); }),
      (dir_ / "config.json").string() + " pretrained_cfg: mean is 0.5, expected a list of numbers");
}

// DINOv2 and SigLIP publish backbones (num_classes 0): no head, and the
// pooled features are the output, as timm's forward gives them.
TEST_F(TimmHubFolderTest, ABackboneWithoutAHeadOutputsItsPooledFeatures) {
  json config = dinov2_config();
  config["model_args"]["num_classes"] = 0;
  config["num_classes"] = 0;
  write_config(config);
  std::ofstream(dir_ / "model.safetensors");
  const ModelConfig m = read_timm_hub_folder(folder()).config.model;
  EXPECT_EQ(m.num_classes, 0);
  // sum(p.numel()) of timm.create_model("vit_small_patch14_reg4_dinov2", num_classes=0),
  // timm 1.0.31, at its 518 px.
  ModelConfig full = timm_architecture("vit_small_patch14_reg4_dinov2");
  full.num_classes = 0;
  EXPECT_EQ(count_parameters(full), 22'057'344);
  VisionTransformer written = write_weights(m);
  EXPECT_EQ(written->named_parameters().find("head.weight"), nullptr);
  LoadedModel loaded = load_model(folder());
  torch::NoGradGuard no_grad;
  const auto images = torch::randn({2, 3, 28, 28});
  const auto features = loaded.model->forward(images);
  EXPECT_EQ(features.sizes(), (c10::IntArrayRef{2, 384}));
  // forward's last block computes the class token's row alone: the same
  // values as the full block's, in fp32 summed in another order.
  EXPECT_TRUE(torch::allclose(features, loaded.model->forward_features(images).select(1, 0),
                              /*rtol=*/1e-5, /*atol=*/1e-5));
}

TEST_F(TimmHubFolderTest, ModelArgsThatContradictTheTensorsNameTheTensorAndBothShapes) {
  write_config(dinov2_config());
  std::ofstream(dir_ / "model.safetensors");
  ModelConfig m = read_timm_hub_folder(folder()).config.model;
  m.num_classes = 7;
  write_weights(m);
  EXPECT_NE(error_of([&] {
              load_model(folder());
            }).find("head.weight: expected [10, 384], file has [7, 384]"),
            std::string::npos);
}

}  // namespace
}  // namespace vit
