// `vit train --init`: pretrained weights into a new run, the fine-tuning
// knobs in config.json, frozen parameters that stay put, and the errors.
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>
#include <torch/torch.h>
#include <nlohmann/json.hpp>

#include "error_of.hpp"
#include "trained_checkpoint.hpp"
#include "vit/weights/timm_layout.hpp"

namespace vit::cli {
namespace {

namespace fs = std::filesystem;
using testing::error_of;
using testing::read_json;
using testing::run_vit;

class TrainInit : public ::testing::Test {
 protected:
  // The block fixture, its config as a file, and random "pretrained" weights
  // of the same architecture exported with their config.
  static void SetUpTestSuite() {
    dir_ = fs::temp_directory_path() / ("vit_train_init_cli_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    testing::write_block_cifar(dir_ / "cifar");
    Config c = testing::block_config(dir_ / "cifar");
    c.train.epochs = 1;
    config_path_ = (dir_ / "blocks.json").string();
    std::ofstream(config_path_) << config_to_json_string(c);
    torch::manual_seed(5);
    VisionTransformer source(c.model);
    weights_ = (dir_ / "pretrained.safetensors").string();
    save_safetensors_weights(weights_, source, c);
    source_state_ = state_tensors(source);
  }
  static void TearDownTestSuite() { fs::remove_all(dir_); }

  static int train(const std::string& out, std::vector<std::string> extra) {
    std::vector<std::string> args = {"train",    "--config", config_path_, "--out", out,
                                     "--device", "cpu",      "--threads",  "1",     "-q"};
    args.insert(args.end(), extra.begin(), extra.end());
    return run_vit(args);
  }

  static inline fs::path dir_;
  static inline std::string config_path_, weights_;
  static inline TensorMap source_state_;
};

TEST_F(TrainInit, FrozenBackboneKeepsThePretrainedWeightsAndANewHeadLearns) {
  const std::string out = (dir_ / "frozen").string();
  ASSERT_EQ(train(out, {"--init", weights_, "--set", "train.freeze=backbone", "--set",
                        "train.init_new_head=true"}),
            0);
  const auto config = read_json(fs::path(out) / "config.json");
  EXPECT_EQ(config["train"]["init"], weights_);
  EXPECT_EQ(config["train"]["freeze"], "backbone");
  EXPECT_EQ(config["train"]["init_new_head"], true);
  EXPECT_EQ(config["train"]["layer_decay"], 1.0);
  EXPECT_EQ(config["train"]["head_lr_scale"], 1.0);

  const TensorMap trained = state_tensors(load_model(out + "/last.pt").model);
  for (const auto& [name, tensor] : trained) {
    if (name.rfind("head.", 0) == 0) continue;
    EXPECT_TRUE(torch::equal(tensor, source_state_.at(name))) << name << " moved";
  }
  // The head started from zeros and trained: neither zero nor the file's.
  EXPECT_GT(trained.at("head.weight").abs().max().item<double>(), 0.0);
  EXPECT_FALSE(torch::equal(trained.at("head.weight"), source_state_.at("head.weight")));

  std::ifstream log(fs::path(out) / "train.log");
  const std::string text((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("init from " + weights_ +
                      ": 30 tensors loaded as they are, 0 adapted, 2 re-initialised, 0 in the "
                      "file unused"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("train.freeze backbone: 30 of 32 parameter tensors frozen"),
            std::string::npos)
      << text;
}

TEST_F(TrainInit, WithoutFreezingEveryTensorTrains) {
  const std::string out = (dir_ / "free").string();
  ASSERT_EQ(train(out, {"--init", weights_}), 0);
  const TensorMap trained = state_tensors(load_model(out + "/last.pt").model);
  EXPECT_FALSE(torch::equal(trained.at("blocks.0.attn.qkv.weight"),
                            source_state_.at("blocks.0.attn.qkv.weight")));
}

TEST_F(TrainInit, InitAndResumeAreExclusive) {
  EXPECT_EQ(error_of([&] {
              train((dir_ / "x").string(), {"--init", weights_, "--resume", weights_});
            }),
            "vit train: --init and --resume are exclusive (--init starts a new run from "
            "pretrained weights; --resume continues a run with its own)");
}

TEST_F(TrainInit, AFileThatIsNotACheckpointIsRejected) {
  EXPECT_EQ(error_of([&] {
              train((dir_ / "y").string(), {"--init", config_path_});
            }),
            config_path_ +
                ": not a checkpoint (expected a vit .pt checkpoint, which is a zip archive, or a "
                "timm .safetensors file)");
}

TEST_F(TrainInit, AnUnknownFreezeValueIsAConfigError) {
  EXPECT_EQ(error_of([&] {
              train((dir_ / "z").string(), {"--set", "train.freeze=head"});
            }),
            config_path_ +
                ": invalid config: train.freeze is 'head', expected none | backbone | N (freeze "
                "the embeddings and the first N blocks, 0..2)");
}

}  // namespace
}  // namespace vit::cli
