#include "analyses/cmd_pos_embed.hpp"
#include "command_list.hpp"

#include <unistd.h>

#include <filesystem>

#include <gtest/gtest.h>
#include <torch/torch.h>
#include <nlohmann/json.hpp>

#include "error_of.hpp"
#include "trained_checkpoint.hpp"
#include "vit/analysis/pos_embed_similarity.hpp"
#include "vit/io/image_io.hpp"
#include "vit/weights/pos_embed_resize.hpp"
#include "vit/weights/timm_layout.hpp"
#include "vit_test_paths.hpp"

namespace vit::cli {
namespace {

namespace fs = std::filesystem;
using testing::read_json;
using testing::run_vit;

TEST(PosEmbedCli, GoodFlagsSetTheRightFields) {
  Cli cli;
  auto o = register_pos_embed(cli);
  const std::string file = std::string(VIT_SOURCE_DIR) + "/CMakeLists.txt";  // any existing file
  cli.parse({"pos-embed", "--checkpoint", file, "--interpolate", "12", "--out", "d"});
  EXPECT_EQ(o->model.checkpoint, file);
  EXPECT_EQ(o->interpolate, 12);
  EXPECT_EQ(o->model.out, "d");
}

TEST(PosEmbedCli, LeftOutFlagsUseTheDefaults) {
  Cli cli;
  auto o = register_pos_embed(cli);
  cli.parse({"pos-embed"});
  EXPECT_FALSE(o->model.checkpoint.has_value());
  EXPECT_FALSE(o->interpolate.has_value());
  EXPECT_EQ(o->model.out, "");
}

TEST(PosEmbedCli, BadFlagsFail) {
  const std::vector<std::vector<std::string>> bad = {
      {"pos-embed", "--interpolate", "0"},
      {"pos-embed", "--interpolate", "257"},
      {"pos-embed", "--interpolate", "wide"},
      {"pos-embed", "--checkpoint", "/does/not/exist.pt"},
  };
  for (const auto& args : bad) {
    Cli cli;
    register_all_commands(cli);
    EXPECT_THROW(cli.parse(args), CLI::ParseError) << ::testing::PrintToString(args);
  }
}

class PosEmbedEndToEnd : public ::testing::Test {
 protected:
  // A random 16 px model in 4 px patches (a 4x4 grid), exported with its config.
  static void SetUpTestSuite() {
    dir_ = fs::temp_directory_path() / ("vit_pos_embed_cli_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "run");
    config_ = testing::block_config(dir_ / "cifar");
    torch::manual_seed(3);
    model_ = VisionTransformer(config_.model);
    weights_ = (dir_ / "run" / "weights.safetensors").string();
    save_safetensors_weights(weights_, model_, config_);
  }
  static void TearDownTestSuite() { fs::remove_all(dir_); }

  static void pos_embed(std::vector<std::string> extra, const std::string& checkpoint = weights_) {
    std::vector<std::string> args = {"pos-embed", "--checkpoint", checkpoint, "--threads",
                                     "1",         "--device",     "cpu",      "--quiet"};
    args.insert(args.end(), extra.begin(), extra.end());
    EXPECT_EQ(run_vit(args), 0);
  }

  static void expect_similarity(const nlohmann::json& rows, const torch::Tensor& expected) {
    ASSERT_EQ(rows.size(), static_cast<size_t>(expected.size(0)));
    for (int64_t i = 0; i < expected.size(0); ++i) {
      ASSERT_EQ(rows[i].size(), static_cast<size_t>(expected.size(1)));
      for (int64_t j = 0; j < expected.size(1); ++j)
        ASSERT_NEAR(rows[i][j].get<double>(), expected[i][j].item<double>(), 1e-6) << i << "," << j;
    }
  }

  static inline fs::path dir_;
  static inline Config config_;
  static inline VisionTransformer model_{nullptr};
  static inline std::string weights_;
};

TEST_F(PosEmbedEndToEnd, WritesTheMatrixAndThePictureNextToTheCheckpoint) {
  pos_embed({});
  const fs::path out = dir_ / "run" / "pos-embed";  // the default --out
  const auto j = read_json(out / "pos_embed.json");
  EXPECT_EQ(j["grid"], 4);
  EXPECT_FALSE(j.contains("interpolated_from"));
  expect_similarity(j["similarity"], pos_embed_similarity(model_->pos_embed));
  EXPECT_DOUBLE_EQ(j["similarity"][5][5].get<double>(), 1.0);
  const auto picture = io::read_image(out / "pos_embed.png", 3, 0);
  EXPECT_GT(picture.size(2), 600);
  EXPECT_GT(picture.size(1), 600);
}

TEST_F(PosEmbedEndToEnd, InterpolateShowsTheResizedGrid) {
  pos_embed({"--interpolate", "6", "--out", (dir_ / "resized").string()});
  const auto j = read_json(dir_ / "resized" / "pos_embed.json");
  EXPECT_EQ(j["grid"], 6);
  EXPECT_EQ(j["interpolated_from"], 4);
  expect_similarity(j["similarity"], pos_embed_similarity(resize_pos_embed(model_->pos_embed, 6)));
}

TEST_F(PosEmbedEndToEnd, APlainTimmFileWithoutConfigIsAClearError) {
  const std::string plain = (dir_ / "plain.safetensors").string();
  write_safetensors(plain, state_tensors(model_));
  EXPECT_EQ(testing::error_of([&] { pos_embed({}, plain); }),
            plain +
                ": no __metadata__[\"vit_config\"] to give the architecture (a plain timm file); "
                "pass --config FILE, e.g. configs/vit-base-patch16-224.json for "
                "vit_base_patch16_224");
}

}  // namespace
}  // namespace vit::cli
