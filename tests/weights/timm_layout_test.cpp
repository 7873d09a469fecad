#include "vit/weights/timm_layout.hpp"

#include <chrono>
#include <filesystem>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "error_of.hpp"
#include "small_model.hpp"
#include "vit/error.hpp"

namespace vit {
namespace {

namespace fs = std::filesystem;

using testing::seeded_model;
using testing::small_config;

torch::Tensor fixed_images() {
  torch::manual_seed(123);
  return torch::randn({2, 3, 16, 16});
}

std::string load_error(VisionTransformer& model, const TensorMap& state) {
  return testing::error_of([&] { load_weights(model, state, "w.safetensors"); });
}

class WeightsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("vit_weights_test_" +
            std::to_string(std::chrono::steady_clock::now().time_since_epoch().count()));
    fs::create_directories(dir_);
    state_ = state_tensors(seeded_model(config_.model, /*seed=*/0));
  }
  void TearDown() override { fs::remove_all(dir_); }

  fs::path dir_;
  Config config_ = small_config();
  TensorMap state_;  // a seed-0 model's weights
};

TEST_F(WeightsTest, ExportedFileLoadsIntoAFreshModelWithIdenticalOutputs) {
  VisionTransformer original = seeded_model(config_.model, /*seed=*/0);
  const std::string path = (dir_ / "model.safetensors").string();
  save_safetensors_weights(path, original, config_);

  const SafetensorsContents file = read_safetensors(path);
  EXPECT_EQ(file.metadata.at("format"), "pt");
  const std::optional<Config> config = config_from_metadata(file.metadata, path);
  ASSERT_TRUE(config.has_value());
  EXPECT_EQ(config->model.dim, 32);
  EXPECT_EQ(config->model.depth, 2);

  VisionTransformer fresh = seeded_model(config->model, /*seed=*/1);
  const auto images = fixed_images();
  torch::NoGradGuard no_grad;
  const auto expected = original->forward(images);
  ASSERT_FALSE(torch::equal(fresh->forward(images), expected));  // another seed differs
  const LoadReport report = load_safetensors_weights(fresh, path);
  EXPECT_TRUE(report.ignored_identity.empty());
  EXPECT_TRUE(torch::equal(fresh->forward(images), expected));
}

TEST_F(WeightsTest, StateTensorsAreFloatCopiesUnderTimmNames) {
  // timm's vit state_dict keys for depth 2, written out by hand.
  std::vector<std::string> timm = {"cls_token", "pos_embed", "patch_embed.proj.weight",
                                   "patch_embed.proj.bias"};
  for (const std::string b : {"blocks.0.", "blocks.1."}) {
    for (const std::string layer :
         {"norm1", "attn.qkv", "attn.proj", "norm2", "mlp.fc1", "mlp.fc2"}) {
      timm.push_back(b + layer + ".weight");
      timm.push_back(b + layer + ".bias");
    }
  }
  for (const std::string name : {"norm.weight", "norm.bias", "head.weight", "head.bias"}) {
    timm.push_back(name);
  }
  std::sort(timm.begin(), timm.end());
  std::vector<std::string> names;
  for (const auto& [name, t] : state_) {
    names.push_back(name);
    EXPECT_EQ(t.scalar_type(), torch::kFloat);
    EXPECT_TRUE(t.is_contiguous());
  }
  EXPECT_EQ(names, timm);
  EXPECT_EQ(state_.at("pos_embed").sizes(), (std::vector<int64_t>{1, 17, 32}));
  EXPECT_EQ(state_.at("blocks.1.attn.qkv.weight").sizes(), (std::vector<int64_t>{96, 32}));

  VisionTransformer model = seeded_model(config_.model, /*seed=*/0);
  TensorMap copy = state_tensors(model);
  copy.at("head.bias").fill_(5.0);
  EXPECT_EQ(model->head->bias.abs().max().item<float>(), 0.0f);  // the model kept its zeros
}

TEST_F(WeightsTest, ConvertsHalfAndDoubleTensorsToTheModelsDtype) {
  VisionTransformer model = seeded_model(config_.model, /*seed=*/1);
  load_weights(model, to_dtype(state_, torch::kDouble), "f64");
  EXPECT_TRUE(torch::equal(model->pos_embed, state_.at("pos_embed")));
  load_weights(model, to_dtype(state_, torch::kBFloat16), "bf16");
  EXPECT_EQ(model->pos_embed.scalar_type(), torch::kFloat);
  EXPECT_TRUE(torch::equal(model->pos_embed,
                           state_.at("pos_embed").to(torch::kBFloat16).to(torch::kFloat)));
}

TEST_F(WeightsTest, AMissingTensorIsReportedByName) {
  state_.erase("head.bias");
  VisionTransformer model = seeded_model(config_.model, /*seed=*/1);
  EXPECT_EQ(load_error(model, state_),
            "w.safetensors: 1 problem loading the weights into vit's model: missing key "
            "'head.bias' (expected [5])");
}

TEST_F(WeightsTest, ReportsEveryProblemAtOnceAndLeavesTheModelUntouched) {
  state_.erase("blocks.0.norm1.bias");
  state_["blocks.1.attn.qkv.weight"] = torch::zeros({48, 16});
  state_["extra.weight"] = torch::zeros({3});
  state_["head.bias"] = torch::zeros({5}, torch::kLong);
  VisionTransformer model = seeded_model(config_.model, /*seed=*/1);
  const auto before = model->blocks[0]->as<BlockImpl>()->norm1->weight.clone();
  EXPECT_EQ(load_error(model, state_),
            "w.safetensors: 4 problems loading the weights into vit's model: "
            "missing key 'blocks.0.norm1.bias' (expected [32]); "
            "blocks.1.attn.qkv.weight: expected [96, 32], file has [48, 16]; "
            "head.bias: file has dtype I64, expected a floating-point dtype; "
            "unexpected key 'extra.weight' (shape [3])");
  EXPECT_TRUE(torch::equal(model->blocks[0]->as<BlockImpl>()->norm1->weight, before));
}

TEST_F(WeightsTest, TimmLayersTheConfigLacksNameTheirSettingOrAreRefused) {
  // CLIP's pre-norm with learned (non-identity) parameters.
  state_["norm_pre.weight"] = torch::full({32}, 1.5);
  state_["norm_pre.bias"] = torch::full({32}, 0.25);
  // A LayerNorm with weight 1 and bias 0 still normalises: not identity.
  state_["fc_norm.weight"] = torch::ones({32});
  state_["fc_norm.bias"] = torch::zeros({32});
  state_["blocks.0.attn.q_norm.weight"] = torch::ones({8});
  state_["blocks.1.attn.q_norm.weight"] = torch::ones({8});
  VisionTransformer model = seeded_model(config_.model, /*seed=*/1);
  EXPECT_EQ(load_error(model, state_),
            "w.safetensors: 3 problems loading the weights into vit's model: "
            "timm layer 'norm_pre' needs model.pre_norm=true: a LayerNorm before the blocks, as "
            "in CLIP; "
            "timm layer 'fc_norm' needs model.fc_norm=true: a LayerNorm after pooling in place "
            "of 'norm'; "
            "timm layer 'blocks.*.attn.q_norm' (in 2 blocks) is not part of vit's architecture: a "
            "LayerNorm on the queries (timm qk_norm=True)");
}

// timm's register models: reg_token (1, R, D) and a pos_embed of the patches
// alone. They load into a model with as many registers, with the same
// outputs; into one without, the error names both tensors and the setting.
TEST_F(WeightsTest, RegistersLoadIntoAModelWithAsManyAndOtherwiseNameTheSetting) {
  Config with_registers = config_;
  with_registers.model.registers = 4;
  VisionTransformer original = seeded_model(with_registers.model, /*seed=*/0);
  const TensorMap state = state_tensors(original);
  ASSERT_EQ(state.count("reg_token"), 1u);
  EXPECT_EQ(state.at("reg_token").sizes(), torch::IntArrayRef({1, 4, 32}));
  EXPECT_EQ(state.at("pos_embed").sizes(), torch::IntArrayRef({1, 16, 32}));  // 4x4 patches
  VisionTransformer fresh = seeded_model(with_registers.model, /*seed=*/1);
  load_weights(fresh, state, "reg.safetensors");
  torch::NoGradGuard no_grad;
  original->eval();
  fresh->eval();
  const auto images = fixed_images();
  EXPECT_TRUE(torch::equal(original->forward(images), fresh->forward(images)));

  VisionTransformer plain = seeded_model(config_.model, /*seed=*/1);
  EXPECT_EQ(load_error(plain, state),
            "w.safetensors: 2 problems loading the weights into vit's model: "
            "pos_embed: expected [1, 17, 32], file has [1, 16, 32]; "
            "unexpected key 'reg_token' (shape [1, 4, 32]) "
            "(the file has 4 register tokens: the config needs model.registers=4)");
  Config two = config_;
  two.model.registers = 2;
  VisionTransformer fewer = seeded_model(two.model, /*seed=*/1);
  EXPECT_EQ(load_error(fewer, state),
            "w.safetensors: 1 problem loading the weights into vit's model: "
            "reg_token: expected [1, 2, 32], file has [1, 4, 32] "
            "(the file has 4 register tokens: the config needs model.registers=4)");
}

TEST_F(WeightsTest, AcceptsLayerScaleOfOnesAndRejectsAnyOtherGamma) {
  for (const std::string name :
       {"blocks.0.ls1.gamma", "blocks.0.ls2.gamma", "blocks.1.ls1.gamma", "blocks.1.ls2.gamma"}) {
    state_[name] = torch::ones({32}, torch::kHalf);
  }
  VisionTransformer model = seeded_model(config_.model, /*seed=*/1);
  const LoadReport report = load_weights(model, state_, "ls");
  EXPECT_EQ(report.ignored_identity,
            (std::vector<std::string>{"blocks.0.ls1.gamma", "blocks.0.ls2.gamma",
                                      "blocks.1.ls1.gamma", "blocks.1.ls2.gamma"}));
  torch::NoGradGuard no_grad;
  EXPECT_TRUE(torch::equal(model->forward(fixed_images()),
                           seeded_model(config_.model, /*seed=*/0)->forward(fixed_images())));

  state_["blocks.1.ls2.gamma"][7] = 0.5;
  EXPECT_EQ(load_error(model, state_),
            "w.safetensors: 1 problem loading the weights into vit's model: timm layer "
            "'blocks.*.ls2' (in 1 block) needs model.init_values > 0: LayerScale on the MLP "
            "branch with gamma other than 1");

  // A gamma of the wrong shape is a mismatch, even when every entry is 1.
  state_["blocks.1.ls2.gamma"] = torch::ones({32}, torch::kHalf);
  state_["blocks.0.ls1.gamma"] = torch::ones({16}, torch::kHalf);
  state_["blocks.1.ls1.gamma"] = torch::ones({1, 32});
  EXPECT_EQ(load_error(model, state_),
            "w.safetensors: 2 problems loading the weights into vit's model: "
            "blocks.0.ls1.gamma: expected [32], file has [16]; "
            "blocks.1.ls1.gamma: expected [32], file has [1, 32]");
}

TEST_F(WeightsTest, HintsAtQkvBiasWhenTheConfigDisagreesWithTheFile) {
  ModelConfig no_bias = config_.model;
  no_bias.qkv_bias = false;
  VisionTransformer model = seeded_model(no_bias, /*seed=*/1);
  const std::string message = load_error(model, state_);
  EXPECT_NE(message.find("2 problems"), std::string::npos) << message;
  EXPECT_NE(message.find("unexpected key 'blocks.0.attn.qkv.bias' (shape [96])"), std::string::npos)
      << message;
  EXPECT_NE(message.find("(the file has qkv biases: the config needs model.qkv_bias=true)"),
            std::string::npos)
      << message;
}

TEST(WeightsMetadata, ConfigComesFromVitConfigOnlyWhenPresentAndValid) {
  EXPECT_FALSE(config_from_metadata({{"format", "pt"}}, "timm.safetensors").has_value());
  Config config = small_config();
  config.model.depth = 7;
  const auto back = config_from_metadata(export_metadata(config), "ours.safetensors");
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->model.depth, 7);
  try {
    config_from_metadata({{"vit_config", R"({"model": {"image_size": 30, "patch_size": 4}})"}},
                         "bad.safetensors");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()).rfind("bad.safetensors __metadata__[\"vit_config\"]: ", 0), 0u)
        << e.what();
  }
}

}  // namespace
}  // namespace vit
