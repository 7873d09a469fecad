// timm hub folders through the command line: fine-tuning from a DINOv2 with
// registers (its architecture from the folder, a new head, the position
// embedding resized), the result exported back as a hub folder, and the
// errors, which write nothing.
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>
#include <torch/torch.h>
#include <nlohmann/json.hpp>

#include "error_of.hpp"
#include "trained_checkpoint.hpp"
#include "vit/io/image_io.hpp"
#include "vit/weights/safetensors.hpp"
#include "vit/weights/timm_hub.hpp"
#include "vit/weights/timm_layout.hpp"

namespace vit::cli {
namespace {

namespace fs = std::filesystem;
using testing::error_of;
using testing::read_json;
using testing::run_vit;

class HubFolder : public ::testing::Test {
 protected:
  // The blocks fixture, and a DINOv2-reg4 hub folder at 56 px (a 4x4 grid),
  // depth 2, 1000 classes, as save_for_hf writes it.
  static void SetUpTestSuite() {
    dir_ = fs::temp_directory_path() / ("vit_hub_folder_cli_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    testing::write_block_cifar(dir_ / "cifar");
    Config c = testing::block_config(dir_ / "cifar");
    c.train.epochs = 1;
    config_path_ = (dir_ / "blocks.json").string();
    std::ofstream(config_path_) << config_to_json_string(c);
    folder_ = dir_ / "dinov2";
    fs::create_directories(folder_);
    std::ofstream(folder_ / "config.json")
        << nlohmann::json{{"architecture", "vit_small_patch14_reg4_dinov2"},
                          {"num_classes", 1000},
                          {"model_args", {{"img_size", {56, 56}}, {"depth", 2}}}};
    ModelConfig m = timm_architecture("vit_small_patch14_reg4_dinov2");
    m.image_size = 56;
    m.depth = 2;
    m.num_classes = 1000;
    torch::manual_seed(9);
    write_safetensors((folder_ / "model.safetensors").string(),
                      state_tensors(VisionTransformer(m)));
  }
  static void TearDownTestSuite() { fs::remove_all(dir_); }

  static std::string log_of(const fs::path& run) {
    std::ifstream log(run / "train.log");
    return {std::istreambuf_iterator<char>(log), std::istreambuf_iterator<char>()};
  }

  static inline fs::path dir_, folder_;
  static inline std::string config_path_;
};

TEST_F(HubFolder, FineTunesFromADinov2WithRegistersAndExportsBackToTimm) {
  const fs::path run = dir_ / "run";
  ASSERT_EQ(run_vit({"train", "--config", config_path_, "--init", folder_.string(), "--set",
                     "model.image_size=28", "--out", run.string(), "--device", "cpu", "--threads",
                     "1", "-q"}),
            0);
  const auto model = read_json(run / "config.json")["model"];
  EXPECT_EQ(model["dim"], 384);  // the folder's architecture
  EXPECT_EQ(model["registers"], 4);
  EXPECT_EQ(model["init_values"], 1e-5);
  EXPECT_EQ(model["patch_size"], 14);
  EXPECT_EQ(model["image_size"], 28);  // the config's input and classes
  EXPECT_EQ(model["num_classes"], 10);
  const std::string log = log_of(run);
  // Every tensor from the folder but the head (new: 10 classes, not 1000)
  // and pos_embed, resized from the 4x4 grid to 2x2.
  EXPECT_NE(
      log.find(
          "init from " + folder_.string() +
          ": 34 tensors loaded as they are, 1 adapted, 2 re-initialised, 0 in the file unused"),
      std::string::npos)
      << log;

  const fs::path exported = dir_ / "exported";
  ASSERT_EQ(run_vit({"export", "--checkpoint", (run / "last.pt").string(), "--format", "timm-hub",
                     "--out", exported.string(), "-q"}),
            0);
  const auto hub = read_json(exported / "config.json");
  EXPECT_EQ(hub["architecture"], "vit_small_patch14_reg4_dinov2");  // the closest in the table
  EXPECT_EQ(hub["model_args"]["reg_tokens"], 4);
  EXPECT_EQ(hub["model_args"]["img_size"], 28);
  LoadedModel trained = load_model((run / "last.pt").string());
  LoadedModel reopened = load_model(exported.string());
  torch::NoGradGuard no_grad;
  const auto images = torch::randn({2, 3, 28, 28});
  EXPECT_TRUE(torch::equal(trained.model->forward(images), reopened.model->forward(images)));
}

TEST_F(HubFolder, BadInputIsOneLineAndWritesNothing) {
  const fs::path file = dir_ / "a-file";
  std::ofstream(file) << "x";
  EXPECT_EQ(error_of([&] {
              run_vit({"export", "--checkpoint", folder_.string(), "--format", "timm-hub", "--out",
                       file.string(), "-q"});
            }),
            file.string() + ": --out is a file; --format timm-hub writes a folder");
  const fs::path empty = dir_ / "empty";
  fs::create_directories(empty);
  const fs::path out = dir_ / "never";
  EXPECT_EQ(error_of([&] {
              run_vit({"export", "--checkpoint", empty.string(), "--format", "timm-hub", "--out",
                       out.string(), "-q"});
            }),
            empty.string() +
                ": not a timm hub folder: no config.json (expected config.json and "
                "model.safetensors, as huggingface-cli download timm/NAME writes them)");
  EXPECT_FALSE(fs::exists(out));
  // A backbone without a head: the analyses of attention run, those of logits say why not.
  const fs::path backbone = dir_ / "backbone";
  fs::create_directories(backbone);
  std::ofstream(backbone / "config.json")
      << nlohmann::json{{"architecture", "vit_small_patch14_reg4_dinov2"},
                        {"model_args", {{"img_size", 28}, {"depth", 1}, {"num_classes", 0}}}};
  ModelConfig m = timm_architecture("vit_small_patch14_reg4_dinov2");
  m.image_size = 28;
  m.depth = 1;
  m.num_classes = 0;
  write_safetensors((backbone / "model.safetensors").string(), state_tensors(VisionTransformer(m)));
  const fs::path image = dir_ / "image.png";
  io::write_png(image.string(), torch::full({3, 28, 28}, 128, torch::kUInt8));
  EXPECT_EQ(run_vit({"attn-distance", "--checkpoint", backbone.string(), "--images", image.string(),
                     "--out", (dir_ / "distance").string(), "-q"}),
            0);
  EXPECT_EQ(read_json(dir_ / "distance" / "attn_distance.json")["distance"].size(), 1u);
  // vit lens gives the backbone's token norms, the registers' apart, and no logits.
  EXPECT_EQ(run_vit({"lens", "--checkpoint", backbone.string(), "--images", image.string(), "--out",
                     (dir_ / "lens").string(), "-q"}),
            0);
  const auto lens = read_json(dir_ / "lens" / "lens.json");
  EXPECT_TRUE(lens["logits"].is_null());
  EXPECT_TRUE(lens["agreement"].is_null());
  EXPECT_EQ(lens["layers"], 2);
  EXPECT_EQ(lens["registers"], 4);
  EXPECT_EQ(lens["token_norms"]["median"].size(), 2u);
  EXPECT_EQ(lens["register_norms"]["median"].size(), 2u);
  EXPECT_TRUE(fs::is_regular_file(dir_ / "lens" / "lens.png"));
  EXPECT_EQ(error_of([&] {
              run_vit({"predict", "--checkpoint", backbone.string(), "--images", image.string()});
            }),
            backbone.string() +
                " has no classifier head (num_classes 0: a backbone, its output is features): "
                "vit predict reads class logits; the attention analyses (rollout, attn-distance, "
                "attention, cka, pos-embed, filters) and lens's token norms need none, and vit "
                "train --init " +
                backbone.string() + " gives it a head");
  EXPECT_EQ(error_of([&] {
              run_vit({"predict", "--checkpoint", "hf-hub:timm", "--images", file.string()});
            }),
            "hf-hub:timm: expected hf-hub:ORG/NAME or hf-hub:ORG/NAME@REVISION");
}

}  // namespace
}  // namespace vit::cli
