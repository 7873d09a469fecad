#include "cmd_saliency.hpp"

#include <unistd.h>

#include <filesystem>

#include <gtest/gtest.h>
#include <torch/torch.h>
#include <nlohmann/json.hpp>

#include "error_of.hpp"
#include "model_inputs.hpp"
#include "trained_checkpoint.hpp"
#include "vit/analysis/saliency.hpp"
#include "vit/io/image_io.hpp"
#include "vit_test_paths.hpp"

namespace vit::cli {
namespace {

namespace fs = std::filesystem;
using testing::error_of;
using testing::read_json;
using testing::run_vit;

TEST(SaliencyCli, FlagsAndDefaults) {
  Cli cli(/*register_all=*/false);
  auto o = register_saliency(cli);
  cli.parse({"saliency", "--method", "grad", "--class", "3", "--samples", "4", "--out", "d"});
  EXPECT_EQ(o->method, "grad");
  EXPECT_EQ(o->target_class, 3);
  EXPECT_EQ(o->samples, 4);
  Cli defaults(/*register_all=*/false);
  auto d = register_saliency(defaults);
  defaults.parse({"saliency"});
  EXPECT_EQ(d->method, "grad-rollout");
  EXPECT_FALSE(d->target_class.has_value());
  const std::string file = std::string(VIT_SOURCE_DIR) + "/CMakeLists.txt";
  for (const auto& args :
       std::vector<std::vector<std::string>>{{"saliency", "--method", "lrp"},
                                             {"saliency", "--class", "-1"},
                                             {"saliency", "--samples", "0"},
                                             {"saliency", "--samples", "2", "--images", file}}) {
    Cli bad;
    EXPECT_THROW(bad.parse(args), CLI::ParseError) << ::testing::PrintToString(args);
  }
}

class SaliencyEndToEnd : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = fs::temp_directory_path() / ("vit_saliency_cli_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    testing::write_block_cifar(dir_ / "cifar");
    checkpoint_ =
        testing::train_tiny_checkpoint(testing::block_config(dir_ / "cifar"), dir_ / "run");
  }
  static void TearDownTestSuite() { fs::remove_all(dir_); }

  static nlohmann::json saliency(const std::string& out, std::vector<std::string> extra) {
    std::vector<std::string> args = {
        "saliency", "--checkpoint", checkpoint_, "--out",  (dir_ / out).string(), "--threads",
        "1",        "--device",     "cpu",       "--quiet"};
    args.insert(args.end(), extra.begin(), extra.end());
    EXPECT_EQ(run_vit(args), 0);
    return read_json(dir_ / out / "saliency.json");
  }

  static inline fs::path dir_;
  static inline std::string checkpoint_;
};

TEST_F(SaliencyEndToEnd, GradRolloutOfSamplesIsGridSizedWithLabels) {
  const auto j = saliency("rollout", {"--samples", "3"});
  EXPECT_EQ(j["method"], "grad-rollout");
  ASSERT_EQ(j["maps"].size(), 3u);
  for (const auto& m : j["maps"]) {
    EXPECT_TRUE(m["label"].is_number_integer());
    EXPECT_EQ(m["class"], m["predicted"]);  // no --class: the predicted one
    ASSERT_EQ(m["mask"].size(), 4u);
    ASSERT_EQ(m["mask"][0].size(), 4u);
    EXPECT_TRUE(fs::exists(dir_ / "rollout" / m["png"].get<std::string>()));
  }
  EXPECT_TRUE(fs::exists(dir_ / "rollout" / "grid.png"));
}

TEST_F(SaliencyEndToEnd, GradOfImagesIsRawAndImageSized) {
  const fs::path a = dir_ / "a.png";
  io::write_png(a, torch::randint(0, 256, {3, 20, 20}, torch::kLong).to(torch::kUInt8));
  const auto j = saliency("grad", {"--images", a.string(), "--method", "grad", "--class", "7"});
  ASSERT_EQ(j["maps"].size(), 1u);
  const auto& m = j["maps"][0];
  EXPECT_TRUE(m["label"].is_null());
  EXPECT_EQ(m["class"], 7);
  ASSERT_EQ(m["mask"].size(), 16u);  // the 16 px model input, not the file's 20 px

  LoadedModel loaded = load_model(checkpoint_);
  const ImageInputs inputs = load_image_inputs({a.string()}, loaded.config, c10::kCPU);
  const auto expected = compute_saliency(loaded.model, inputs.normalized, SaliencyMethod::kGrad,
                                         torch::tensor({int64_t{7}}));
  for (int64_t r = 0; r < 16; r += 5)
    for (int64_t c = 0; c < 16; c += 3)
      EXPECT_NEAR(m["mask"][r][c].get<double>(), expected.maps[0][r][c].item<double>(),
                  1e-6 * (1 + expected.maps.abs().max().item<double>()));
}

TEST_F(SaliencyEndToEnd, ClassOutOfRangeIsAClearError) {
  EXPECT_EQ(error_of([] {
              saliency("bad", {"--class", "10", "--samples", "1"});
            }),
            "--class 10 is outside the model's classes 0..9");
}

}  // namespace
}  // namespace vit::cli
