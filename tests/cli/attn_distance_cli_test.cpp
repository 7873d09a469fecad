#include "analyses/cmd_attn_distance.hpp"
#include "command_list.hpp"

#include <unistd.h>

#include <filesystem>

#include <gtest/gtest.h>
#include <torch/torch.h>
#include <nlohmann/json.hpp>

#include "cli/input_images.hpp"
#include "trained_checkpoint.hpp"
#include "vit/analysis/attention_distance.hpp"
#include "vit/io/image_io.hpp"
#include "vit/weights/timm_layout.hpp"
#include "vit_test_paths.hpp"

namespace vit::cli {
namespace {

namespace fs = std::filesystem;
using testing::read_json;
using testing::read_lines;
using testing::run_vit;

TEST(AttnDistanceCli, GoodFlagsSetTheRightFields) {
  Cli cli;
  auto o = register_attn_distance(cli);
  const std::string file = std::string(VIT_SOURCE_DIR) + "/CMakeLists.txt";  // any existing file
  cli.parse(
      {"attn-distance", "--checkpoint", file, "--samples", "32", "--out", "d", "--renormalize"});
  EXPECT_EQ(o->model.checkpoint, file);
  EXPECT_EQ(o->samples, 32);
  EXPECT_EQ(o->model.out, "d");
  EXPECT_EQ(o->renormalize, std::optional<bool>(true));
  EXPECT_TRUE(o->images.empty());
}

TEST(AttnDistanceCli, NoRenormalizeSetsFalseSoItCanOverrideTheConfig) {
  Cli cli;
  auto o = register_attn_distance(cli);
  cli.parse({"attn-distance", "--no-renormalize"});
  EXPECT_EQ(o->renormalize, std::optional<bool>(false));
}

TEST(AttnDistanceCli, LeftOutFlagsFallBackToTheConfig) {
  Cli cli;
  auto o = register_attn_distance(cli);
  cli.parse({"attn-distance"});
  EXPECT_FALSE(o->model.checkpoint.has_value());
  EXPECT_FALSE(o->samples.has_value());
  EXPECT_EQ(o->model.out, "");
  EXPECT_FALSE(o->renormalize.has_value());
}

TEST(AttnDistanceCli, BadFlagsFail) {
  const std::string file = std::string(VIT_SOURCE_DIR) + "/CMakeLists.txt";
  const std::vector<std::vector<std::string>> bad = {
      {"attn-distance", "--samples", "0"},
      {"attn-distance", "--samples", "many"},
      {"attn-distance", "--samples", "3", "--images", file},
      {"attn-distance", "--images"},
      {"attn-distance", "--renormalize=maybe"},
      {"attn-distance", "--renormalize=false"},  // would read as not given: say --no-renormalize
      {"attn-distance", "--renormalize", "--no-renormalize"},
      {"attn-distance", "--checkpoint", "/does/not/exist.pt"},
  };
  for (const auto& args : bad) {
    Cli cli;
    register_all_commands(cli);
    EXPECT_THROW(cli.parse(args), CLI::ParseError) << ::testing::PrintToString(args);
  }
}

class AttnDistanceEndToEnd : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = fs::temp_directory_path() / ("vit_attn_distance_cli_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    testing::write_block_cifar(dir_ / "cifar");
    config_ = testing::block_config(dir_ / "cifar");
    checkpoint_ = testing::train_tiny_checkpoint(config_, dir_ / "run");
  }
  static void TearDownTestSuite() { fs::remove_all(dir_); }

  // Runs `vit attn-distance` on the trained checkpoint; returns what it printed.
  static std::string attn_distance(std::vector<std::string> extra,
                                   const std::string& checkpoint = checkpoint_) {
    std::vector<std::string> args = {"attn-distance", "--checkpoint", checkpoint, "--threads", "1",
                                     "--device",      "cpu",          "--quiet"};
    args.insert(args.end(), extra.begin(), extra.end());
    ::testing::internal::CaptureStdout();
    const int code = run_vit(args);
    const std::string printed = ::testing::internal::GetCapturedStdout();
    EXPECT_EQ(code, 0);
    return printed;
  }

  static inline fs::path dir_;
  static inline Config config_;
  static inline std::string checkpoint_;
};

TEST_F(AttnDistanceEndToEnd, WritesJsonCsvPlotAndTableNextToTheCheckpoint) {
  const std::string printed = attn_distance({"--samples", "8"});
  const fs::path out = dir_ / "run" / "attn-distance";  // the default --out
  const auto j = read_json(out / "attn_distance.json");
  EXPECT_EQ(j["patch_size"], 4);
  EXPECT_EQ(j["grid"], 4);
  EXPECT_EQ(j["samples"], 8);
  EXPECT_EQ(j["renormalize"], false);
  ASSERT_EQ(j["distance"].size(), 2u);  // depth
  // No head can look further than corner to corner: 4 px * 3 * sqrt(2).
  for (const auto& layer : j["distance"]) {
    ASSERT_EQ(layer.size(), 2u);  // heads
    for (const auto& d : layer) {
      ASSERT_TRUE(d.is_number_float());
      EXPECT_GT(d.get<double>(), 0.0);
      EXPECT_LT(d.get<double>(), 4 * 3 * std::sqrt(2.0));
    }
  }
  const auto csv = read_lines(out / "attn_distance.csv");
  ASSERT_EQ(csv.size(), 1u + 2 * 2);
  EXPECT_EQ(csv[0], "layer,head,distance_px");
  EXPECT_EQ(csv[3], "2,1," + fmt::format("{}", j["distance"][1][0].get<double>()));
  const auto plot = io::read_image(out / "attn_distance.png", 3, 0);
  EXPECT_GT(plot.size(2), 400);
  EXPECT_NE(printed.find("Mean attention distance in pixels (8 images, 4 px patches, 4x4 grid)"),
            std::string::npos)
      << printed;
  EXPECT_NE(printed.find("layer   head 1   head 2     mean\n    1"), std::string::npos) << printed;
}

TEST_F(AttnDistanceEndToEnd, ImagesGiveTheLibrarysDistances) {
  const fs::path a = dir_ / "a.png", b = dir_ / "b.png";
  io::write_png(a, torch::randint(0, 256, {3, 16, 16}, torch::kLong).to(torch::kUInt8));
  io::write_png(b, torch::randint(0, 256, {1, 40, 30}, torch::kLong).to(torch::kUInt8));
  attn_distance(
      {"--images", a.string(), b.string(), "--renormalize", "--out", (dir_ / "mine").string()});
  const auto j = read_json(dir_ / "mine" / "attn_distance.json");
  EXPECT_EQ(j["samples"], 2);
  EXPECT_EQ(j["renormalize"], true);

  LoadedModel loaded = load_model(checkpoint_);
  const ImageInputs inputs = load_image_inputs({a.string(), b.string()}, loaded.config, c10::kCPU);
  torch::NoGradGuard no_grad;
  const auto expected = average_over_images(
      mean_attention_distance(loaded.model->forward_with_attention(inputs.normalized).attention,
                              /*patch_size=*/4, /*renormalize=*/true));
  for (int64_t l = 0; l < 2; ++l)
    for (int64_t h = 0; h < 2; ++h)
      EXPECT_NEAR(j["distance"][l][h].get<double>(), expected[l][h].item<double>(), 1e-4) << l << h;
}

TEST_F(AttnDistanceEndToEnd, NoRenormalizeOverridesAConfigThatRenormalizes) {
  // The same weights exported with analysis.renormalize = true in vit_config:
  // without a flag the config's setting holds, --no-renormalize switches it off.
  LoadedModel loaded = load_model(checkpoint_);
  Config config = loaded.config;
  config.analysis.renormalize = true;
  const std::string exported = (dir_ / "renormalizing.safetensors").string();
  save_safetensors_weights(exported, loaded.model, config, loaded.class_names);
  const fs::path image = dir_ / "one.png";
  io::write_png(image, torch::randint(0, 256, {3, 16, 16}, torch::kLong).to(torch::kUInt8));
  const auto run = [&](const std::string& name, const std::string& checkpoint,
                       std::vector<std::string> flags) {
    const std::vector<std::string> inputs = {"--images", image.string(), "--out",
                                             (dir_ / name).string()};
    flags.insert(flags.end(), inputs.begin(), inputs.end());
    attn_distance(flags, checkpoint);
    return read_json(dir_ / name / "attn_distance.json");
  };
  const auto by_config = run("by-config", exported, {});
  const auto switched_off = run("switched-off", exported, {"--no-renormalize"});
  EXPECT_EQ(by_config["renormalize"], true);
  EXPECT_EQ(switched_off["renormalize"], false);
  // The .pt checkpoint's config leaves renormalize off: the flags give the same numbers.
  EXPECT_EQ(by_config["distance"], run("pt-on", checkpoint_, {"--renormalize"})["distance"]);
  EXPECT_EQ(switched_off["distance"], run("pt-off", checkpoint_, {})["distance"]);
  EXPECT_NE(by_config["distance"], switched_off["distance"]);
}

TEST_F(AttnDistanceEndToEnd, TheDefaultSampleCountComesFromTheConfig) {
  attn_distance({"--out", (dir_ / "default").string()});
  EXPECT_EQ(read_json(dir_ / "default" / "attn_distance.json")["samples"],
            12);  // analysis.distance_samples
}

}  // namespace
}  // namespace vit::cli
