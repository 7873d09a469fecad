#include "analyses/cmd_rollout.hpp"
#include "command_list.hpp"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>
#include <torch/torch.h>
#include <nlohmann/json.hpp>

#include "cli/input_images.hpp"
#include "trained_checkpoint.hpp"
#include "vit/analysis/rollout.hpp"
#include "vit/error.hpp"
#include "vit/io/image_io.hpp"
#include "vit_test_paths.hpp"

namespace vit::cli {
namespace {

namespace fs = std::filesystem;
using testing::read_json;
using testing::run_vit;

TEST(RolloutCli, GoodFlagsSetTheRightFields) {
  Cli cli;
  auto o = register_rollout(cli);
  const std::string ckpt = std::string(VIT_SOURCE_DIR) + "/CMakeLists.txt";  // any existing file
  cli.parse({"rollout", "--checkpoint", ckpt, "--out", "maps", "--samples", "9", "--head-fusion",
             "max", "--discard-ratio", "0.9", "--seed", "4"});
  EXPECT_EQ(o->model.checkpoint, ckpt);
  EXPECT_EQ(o->model.out, "maps");
  EXPECT_EQ(o->samples, 9);
  EXPECT_TRUE(o->images.empty());
  EXPECT_EQ(o->head_fusion, HeadFusion::kMax);
  EXPECT_EQ(o->discard_ratio, 0.9);
  EXPECT_EQ(o->common.seed, 4u);
}

TEST(RolloutCli, LeftOutFlagsFallBackToTheConfig) {
  Cli cli;
  auto o = register_rollout(cli);
  const std::string image = std::string(VIT_SOURCE_DIR) + "/CMakeLists.txt";
  cli.parse({"rollout", "--out", "maps", "--images", image, image});
  EXPECT_FALSE(o->model.checkpoint.has_value());
  EXPECT_FALSE(o->samples.has_value());
  EXPECT_FALSE(o->head_fusion.has_value());
  EXPECT_FALSE(o->discard_ratio.has_value());
  EXPECT_EQ(o->images, (std::vector<std::string>{image, image}));
}

TEST(RolloutCli, BadFlagsFail) {
  const std::string file = std::string(VIT_SOURCE_DIR) + "/CMakeLists.txt";
  const std::vector<std::vector<std::string>> bad = {
      {"rollout", "--samples", "4"},  // --out is required
      {"rollout", "--out", "m", "--samples", "0"},
      {"rollout", "--out", "m", "--samples", "-2"},
      {"rollout", "--out", "m", "--samples", "3", "--images", file},  // one or the other
      {"rollout", "--out", "m", "--images", file, "--samples", "3"},
      {"rollout", "--out", "m", "--head-fusion", "median"},
      {"rollout", "--out", "m", "--discard-ratio", "1"},
      {"rollout", "--out", "m", "--discard-ratio", "-0.1"},
      {"rollout", "--out", "m", "--discard-ratio", "most"},
      {"rollout", "--out", "m", "--checkpoint", "/does/not/exist.pt"},
      {"rollout", "--out", "m", "--images", "/does/not/exist.png"},
  };
  for (const auto& args : bad) {
    Cli cli;
    register_all_commands(cli);
    EXPECT_THROW(cli.parse(args), CLI::ParseError) << ::testing::PrintToString(args);
  }
}

TEST(RolloutCli, BadNumbersSayWhatIsExpected) {
  const auto error_of = [](const std::vector<std::string>& args) -> std::string {
    try {
      Cli cli;
      register_rollout(cli);
      cli.parse(args);
    } catch (const CLI::ParseError& e) {
      return e.what();
    }
    return "no error";
  };
  EXPECT_EQ(error_of({"rollout", "--out", "m", "--samples", "0"}),
            "--samples: 0 is not a whole number >= 1");
  EXPECT_EQ(error_of({"rollout", "--out", "m", "--discard-ratio", "1"}),
            "--discard-ratio: 1 is not in [0, 1)");
}

class RolloutEndToEnd : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = fs::temp_directory_path() / ("vit_rollout_cli_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    testing::write_block_cifar(dir_ / "cifar");
    config_ = testing::block_config(dir_ / "cifar");
    checkpoint_ = testing::train_tiny_checkpoint(config_, dir_ / "run");
  }
  static void TearDownTestSuite() { fs::remove_all(dir_); }

  // Runs `vit rollout` on the trained checkpoint into dir_/name and returns rollout.json.
  static nlohmann::json rollout(const std::string& name, std::vector<std::string> extra,
                                const std::string& checkpoint = checkpoint_) {
    std::vector<std::string> args = {
        "rollout", "--checkpoint", checkpoint, "--out",  (dir_ / name).string(), "--threads",
        "1",       "--device",     "cpu",      "--quiet"};
    args.insert(args.end(), extra.begin(), extra.end());
    EXPECT_EQ(run_vit(args), 0);
    return read_json(dir_ / name / "rollout.json");
  }

  static void expect_mask_schema(const nlohmann::json& mask) {
    ASSERT_TRUE(mask.is_array());
    ASSERT_EQ(mask.size(), 4u);
    double top = 0;
    for (const auto& row : mask) {
      ASSERT_EQ(row.size(), 4u);
      for (const auto& v : row) {
        ASSERT_TRUE(v.is_number_float());
        EXPECT_GE(v.get<double>(), 0.0);
        top = std::max(top, v.get<double>());
      }
    }
    EXPECT_EQ(top, 1.0);
  }

  static inline fs::path dir_;
  static inline Config config_;
  static inline std::string checkpoint_;
};

TEST_F(RolloutEndToEnd, SamplesFromTheValidationSplitWithTheirLabels) {
  const auto j = rollout("samples", {"--seed", "5"});
  EXPECT_EQ(j["grid"], nlohmann::json::array({4, 4}));
  EXPECT_EQ(j["head_fusion"], "mean");
  EXPECT_EQ(j["discard_ratio"], 0.0);
  EXPECT_EQ(j["source"], "class_token");
  const auto val = data::load_data(config_).val;
  ASSERT_EQ(j["maps"].size(), 6u);  // analysis.rollout_samples of the checkpoint's config
  int64_t previous = -1;
  for (const auto& m : j["maps"]) {
    const std::string id = m["image"];
    ASSERT_EQ(id.rfind("val:", 0), 0u) << id;
    const int64_t index = std::stoll(id.substr(4));
    EXPECT_GT(index, previous);  // distinct, in validation-split order
    previous = index;
    EXPECT_EQ(m["label"], val.labels[index].item<int64_t>());
    EXPECT_EQ(m["label_class"], val.classes[m["label"].get<size_t>()]);
    EXPECT_EQ(m["predicted_class"], val.classes.at(m["predicted"].get<size_t>()));
    expect_mask_schema(m["mask"]);
    // 16 px images are shown 8x: 128 px originals, 8 px gap, 128 px overlays.
    const auto png = io::read_image(dir_ / "samples" / m["png"].get<std::string>(), 3, 0);
    EXPECT_EQ(png.sizes(), (std::vector<int64_t>{3, 128, 264}));
  }
  EXPECT_EQ(j["maps"][0]["png"],
            "00-val" + j["maps"][0]["image"].get<std::string>().substr(4) + ".png");
  EXPECT_TRUE(fs::exists(dir_ / "samples" / "grid.png"));

  // The seed decides the draw: again the same, another seed another.
  EXPECT_EQ(rollout("again", {"--seed", "5"})["maps"][0]["image"], j["maps"][0]["image"]);
  std::vector<std::string> first, other;
  for (const auto& m : j["maps"])
    first.push_back(m["image"]);
  // Kept in a variable: a range-for over rollout(...)["maps"] reads the
  // temporary json after its end (ASan found it).
  const nlohmann::json reseeded = rollout("other", {"--seed", "6"});
  for (const auto& m : reseeded["maps"])
    other.push_back(m["image"]);
  EXPECT_NE(first, other);
}

TEST_F(RolloutEndToEnd, MoreSamplesThanTheSplitHoldsMapsTheWholeSplit) {
  EXPECT_EQ(rollout("all", {"--samples", "50"})["maps"].size(), 20u);  // data.val_size
}

TEST_F(RolloutEndToEnd, ImagesGiveTheLibrarysMasksAndNoLabel) {
  // Two files with one stem, of other sizes and channel counts than the model's.
  const fs::path a = dir_ / "a" / "pic.png", b = dir_ / "b" / "pic.png";
  io::write_png(a, torch::randint(0, 256, {3, 20, 24}, torch::kLong).to(torch::kUInt8));
  io::write_png(b, torch::full({1, 10, 10}, 200, torch::kUInt8));
  const auto j = rollout("images", {"--images", a.string(), b.string(), "--head-fusion", "max",
                                    "--discard-ratio", "0.5"});
  EXPECT_EQ(j["head_fusion"], "max");
  EXPECT_EQ(j["discard_ratio"], 0.5);
  ASSERT_EQ(j["maps"].size(), 2u);
  EXPECT_EQ(j["maps"][0]["image"], a.string());
  EXPECT_EQ(j["maps"][1]["image"], b.string());
  EXPECT_EQ(j["maps"][0]["png"], "00-pic.png");
  EXPECT_EQ(j["maps"][1]["png"], "01-pic.png");

  LoadedModel loaded = load_model(checkpoint_);
  const ImageInputs inputs = load_image_inputs({a.string(), b.string()}, loaded.config, c10::kCPU);
  torch::NoGradGuard no_grad;
  RolloutOptions options;
  options.fusion = HeadFusion::kMax;
  options.discard_ratio = 0.5;
  const auto expected =
      rollout_masks(loaded.model->forward_with_attention(inputs.normalized).attention, options);
  for (int64_t i = 0; i < 2; ++i) {
    const auto& m = j["maps"][i];
    EXPECT_TRUE(m["label"].is_null());
    EXPECT_TRUE(m["label_class"].is_null());
    expect_mask_schema(m["mask"]);
    for (int64_t r = 0; r < 4; ++r)
      for (int64_t c = 0; c < 4; ++c)
        EXPECT_NEAR(m["mask"][r][c].get<double>(), expected[i][r][c].item<double>(), 1e-6)
            << i << r << c;
    EXPECT_TRUE(fs::exists(dir_ / "images" / m["png"].get<std::string>()));
  }
}

TEST_F(RolloutEndToEnd, MeanPooledModelsUseThePatchMeanRow) {
  Config mean_pool = testing::block_config(dir_ / "cifar", Pool::kMean);
  mean_pool.train.epochs = 1;
  const std::string checkpoint = testing::train_tiny_checkpoint(mean_pool, dir_ / "run-mean");
  const auto j = rollout("mean", {"--samples", "2"}, checkpoint);
  EXPECT_EQ(j["source"], "patch_mean");
  ASSERT_EQ(j["maps"].size(), 2u);
  expect_mask_schema(j["maps"][0]["mask"]);

  // The values, not only the label: the library's patch-mean maps of the same images.
  const fs::path a = dir_ / "mean-a.png", b = dir_ / "mean-b.png";
  io::write_png(a, torch::randint(0, 256, {3, 16, 16}, torch::kLong).to(torch::kUInt8));
  io::write_png(b, torch::randint(0, 256, {3, 24, 20}, torch::kLong).to(torch::kUInt8));
  const auto images = rollout("mean-images", {"--images", a.string(), b.string()}, checkpoint);
  EXPECT_EQ(images["source"], "patch_mean");
  ASSERT_EQ(images["maps"].size(), 2u);

  LoadedModel loaded = load_model(checkpoint);
  const ImageInputs inputs = load_image_inputs({a.string(), b.string()}, loaded.config, c10::kCPU);
  torch::NoGradGuard no_grad;
  const auto attention = loaded.model->forward_with_attention(inputs.normalized).attention;
  RolloutOptions options;
  options.source = RolloutSource::kPatchMean;
  const auto expected = rollout_masks(attention, options);
  RolloutOptions class_token = options;
  class_token.source = RolloutSource::kClassToken;
  // This barely trained model's maps are nearly flat, but its two rows still differ by
  // ~3e-3, far beyond the 1e-6 below: matching the patch-mean maps means vit used that row.
  ASSERT_GT((expected - rollout_masks(attention, class_token)).abs().max().item<double>(), 1e-4);
  for (int64_t i = 0; i < 2; ++i) {
    const auto& m = images["maps"][i];
    expect_mask_schema(m["mask"]);
    for (int64_t r = 0; r < 4; ++r)
      for (int64_t c = 0; c < 4; ++c)
        EXPECT_NEAR(m["mask"][r][c].get<double>(), expected[i][r][c].item<double>(), 1e-6)
            << i << r << c;
  }
}

TEST_F(RolloutEndToEnd, AnUnreadableImageIsAnErrorNamingIt) {
  const fs::path junk = dir_ / "junk.png";
  std::ofstream(junk) << "not a png";
  try {
    rollout("junk", {"--images", junk.string()});
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(junk.string()), std::string::npos) << e.what();
  }
}

TEST_F(RolloutEndToEnd, WithoutACheckpointTheBinarySaysSoOnOneLine) {
  if (!fs::exists(VIT_BINARY)) GTEST_SKIP() << "build the vit target to run this test";
  const fs::path log = dir_ / "no-checkpoint.log";
  const std::string command = "cd " + dir_.string() + " && " + VIT_BINARY +
                              " rollout --out maps > " + log.string() + " 2>&1";
  EXPECT_NE(std::system(command.c_str()), 0);
  const auto lines = testing::read_lines(log);
  ASSERT_EQ(lines.size(), 1u) << ::testing::PrintToString(lines);
  EXPECT_NE(lines[0].find("no --checkpoint given and runs/latest/best.pt does not exist"),
            std::string::npos)
      << lines[0];
}

}  // namespace
}  // namespace vit::cli
