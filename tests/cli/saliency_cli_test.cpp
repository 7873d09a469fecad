#include "analyses/cmd_saliency.hpp"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>
#include <torch/torch.h>
#include <nlohmann/json.hpp>

#include "cli/input_images.hpp"
#include "error_of.hpp"
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
  Cli cli;
  auto o = register_saliency(cli);
  cli.parse({"saliency", "--method", "grad", "--class", "3", "--samples", "4", "--out", "d"});
  EXPECT_EQ(o->method, SaliencyMethod::kGrad);
  EXPECT_EQ(o->target_class, 3);
  EXPECT_EQ(o->samples, 4);
  Cli defaults;
  auto d = register_saliency(defaults);
  defaults.parse({"saliency"});
  EXPECT_EQ(d->method, SaliencyMethod::kGradRollout);
  EXPECT_FALSE(d->target_class.has_value());
  EXPECT_EQ(d->steps, 32);
  EXPECT_EQ(d->baseline, SaliencyBaseline::kMean);
  EXPECT_DOUBLE_EQ(d->noise, 0.15);
  EXPECT_EQ(d->samples_per_image, 25);
  Cli averaging;
  auto a = register_saliency(averaging);
  averaging.parse({"saliency", "--method", "integrated-gradients", "--steps", "8", "--baseline",
                   "black", "--noise", "0.3", "--samples-per-image", "5"});
  EXPECT_EQ(a->method, SaliencyMethod::kIntegratedGradients);
  EXPECT_EQ(a->steps, 8);
  EXPECT_EQ(a->baseline, SaliencyBaseline::kBlack);
  EXPECT_DOUBLE_EQ(a->noise, 0.3);
  EXPECT_EQ(a->samples_per_image, 5);
  const std::string file = std::string(VIT_SOURCE_DIR) + "/CMakeLists.txt";
  for (const auto& args :
       std::vector<std::vector<std::string>>{{"saliency", "--method", "lrp"},
                                             {"saliency", "--class", "-1"},
                                             {"saliency", "--baseline", "white"},
                                             {"saliency", "--samples", "0"},
                                             {"saliency", "--samples", "2", "--images", file}}) {
    Cli bad;
    EXPECT_THROW(bad.parse(args), CLI::ParseError) << ::testing::PrintToString(args);
  }
}

// The rows of a CSV whose fields hold no commas or quotes.
std::vector<std::vector<std::string>> csv_rows(const fs::path& file) {
  std::ifstream in(file);
  std::vector<std::vector<std::string>> rows;
  for (std::string line; std::getline(in, line);) {
    std::vector<std::string> fields;
    std::stringstream fields_of(line);
    for (std::string field; std::getline(fields_of, field, ',');)
      fields.push_back(field);
    if (!line.empty() && line.back() == ',') fields.emplace_back();
    rows.push_back(fields);
  }
  return rows;
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

  // saliency.csv: one row per map, the same image, label, class and file as
  // the JSON, and the peak of the JSON's mask.
  const auto rows = csv_rows(dir_ / "rollout" / "saliency.csv");
  ASSERT_EQ(rows.size(), 4u);
  EXPECT_EQ(rows[0], (std::vector<std::string>{"image", "label", "class", "class_name", "predicted",
                                               "logit", "probability", "peak_row", "peak_column",
                                               "peak", "mean", "png"}));
  for (size_t i = 0; i < 3; ++i) {
    const auto& m = j["maps"][i];
    const auto& row = rows[i + 1];
    EXPECT_EQ(row[0], m["image"].get<std::string>());
    EXPECT_EQ(row[1], std::to_string(m["label"].get<int64_t>()));
    EXPECT_EQ(row[2], std::to_string(m["class"].get<int64_t>()));
    EXPECT_EQ(row[11], m["png"].get<std::string>());
    double peak = -1;
    std::string where;
    for (int r = 0; r < 4; ++r)
      for (int c = 0; c < 4; ++c)
        if (m["mask"][r][c].get<double>() > peak) {
          peak = m["mask"][r][c].get<double>();
          where = std::to_string(r) + "," + std::to_string(c);
        }
    EXPECT_EQ(row[7] + "," + row[8], where);
    EXPECT_NEAR(std::stod(row[9]), peak, 1e-5 * peak);
    EXPECT_NEAR(std::stod(row[5]), m["logit"].get<double>(), 1e-5);
  }
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

  // The explained class's logit and probability, from the same forward pass.
  const double logit = expected.logits[0][7].item<double>();
  const double probability = expected.logits[0].softmax(0)[7].item<double>();
  EXPECT_NEAR(m["logit"].get<double>(), logit, 1e-5);
  EXPECT_NEAR(m["probability"].get<double>(), probability, 1e-6);
  const auto rows = csv_rows(dir_ / "grad" / "saliency.csv");
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[1][1], "");  // no label for --images
  EXPECT_EQ(rows[1][2], "7");
  EXPECT_NEAR(std::stod(rows[1][5]), logit, 1e-5);
  EXPECT_NEAR(std::stod(rows[1][6]), probability, 1e-5);
  const int64_t at = expected.maps[0].argmax().item<int64_t>();
  EXPECT_EQ(rows[1][7], std::to_string(at / 16));
  EXPECT_EQ(rows[1][8], std::to_string(at % 16));
}

// Integrated gradients keep their sign in the JSON, with each map's
// completeness error; the CSV's peak is |mask|'s.
TEST_F(SaliencyEndToEnd, IntegratedGradientsKeepTheirSignAndSayHowCompleteTheyAre) {
  const fs::path a = dir_ / "ig.png";
  io::write_png(a, torch::randint(0, 256, {3, 16, 16}, torch::kLong).to(torch::kUInt8));
  const auto j = saliency("ig", {"--images", a.string(), "--method", "integrated-gradients",
                                 "--steps", "16", "--baseline", "black", "--class", "3"});
  EXPECT_EQ(j["method"], "integrated-gradients");
  EXPECT_EQ(j["settings"], (nlohmann::json{{"steps", 16}, {"baseline", "black"}}));
  ASSERT_EQ(j["maps"].size(), 1u);
  const auto& m = j["maps"][0];

  LoadedModel loaded = load_model(checkpoint_);
  const ImageInputs inputs = load_image_inputs({a.string()}, loaded.config, c10::kCPU);
  GradientAveraging averaging;
  averaging.steps = 16;
  averaging.baseline =
      normalize_pixels(torch::zeros({1, 3, 16, 16}, torch::kUInt8), loaded.config, c10::kCPU);
  const auto expected =
      compute_saliency(loaded.model, inputs.normalized, SaliencyMethod::kIntegratedGradients,
                       torch::tensor({int64_t{3}}), RolloutSource::kClassToken, averaging);
  const double scale = expected.maps.abs().max().item<double>();
  bool negative = false;
  for (int64_t r = 0; r < 16; ++r)
    for (int64_t c = 0; c < 16; ++c) {
      EXPECT_NEAR(m["mask"][r][c].get<double>(), expected.maps[0][r][c].item<double>(),
                  1e-5 * scale);
      negative = negative || m["mask"][r][c].get<double>() < 0;
    }
  EXPECT_TRUE(negative);  // signed, not |.|
  EXPECT_NEAR(m["completeness_error"].get<double>(), expected.completeness_error[0].item<double>(),
              1e-6);
  EXPECT_LT(std::abs(m["completeness_error"].get<double>()), 0.05);
  const auto rows = csv_rows(dir_ / "ig" / "saliency.csv");
  ASSERT_EQ(rows.size(), 2u);
  const int64_t at = expected.maps[0].abs().argmax().item<int64_t>();
  EXPECT_EQ(rows[1][7] + "," + rows[1][8], std::to_string(at / 16) + "," + std::to_string(at % 16));
  EXPECT_NEAR(std::stod(rows[1][9]), scale, 1e-5 * scale);
}

TEST_F(SaliencyEndToEnd, SmoothGradIsTheSameForTheSameSeed) {
  const std::vector<std::string> args = {
      "--samples",           "2", "--method", "smoothgrad", "--noise", "0.25",
      "--samples-per-image", "3", "--seed",   "5"};
  const auto first = saliency("smooth1", args), second = saliency("smooth2", args);
  EXPECT_EQ(first["settings"], (nlohmann::json{{"noise", 0.25}, {"samples_per_image", 3}}));
  ASSERT_EQ(first["maps"].size(), 2u);
  EXPECT_EQ(first["maps"][0]["mask"], second["maps"][0]["mask"]);
  EXPECT_EQ(first["maps"][1]["mask"], second["maps"][1]["mask"]);
  EXPECT_FALSE(first["maps"][0].contains("completeness_error"));
  auto reseeded = args;
  reseeded.back() = "6";
  EXPECT_NE(saliency("smooth3", reseeded)["maps"][0]["mask"], first["maps"][0]["mask"]);
}

TEST_F(SaliencyEndToEnd, BadAveragingSettingsAreOneLineErrors) {
  EXPECT_EQ(error_of([] {
              saliency("bad", {"--method", "integrated-gradients", "--steps", "0"});
            }),
            "--steps 0: expected at least 1");
  EXPECT_EQ(error_of([] {
              saliency("bad", {"--method", "smoothgrad", "--samples-per-image", "0"});
            }),
            "--samples-per-image 0: expected at least 1");
  EXPECT_EQ(error_of([] {
              saliency("bad", {"--method", "smoothgrad", "--noise", "-1"});
            }),
            "--noise -1: expected a fraction of the input's range, >= 0");
}

TEST_F(SaliencyEndToEnd, ClassOutOfRangeIsAClearError) {
  EXPECT_EQ(error_of([] {
              saliency("bad", {"--class", "10", "--samples", "1"});
            }),
            "--class 10 is outside the model's classes 0..9");
}

}  // namespace
}  // namespace vit::cli
