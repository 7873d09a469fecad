#include "analyses/cmd_filters.hpp"

#include <unistd.h>

#include <filesystem>

#include <gtest/gtest.h>
#include <torch/torch.h>
#include <nlohmann/json.hpp>

#include "error_of.hpp"
#include "trained_checkpoint.hpp"
#include "vit/analysis/filter_pca.hpp"
#include "vit/io/image_io.hpp"
#include "vit/weights/timm_layout.hpp"
#include "vit_test_paths.hpp"

namespace vit::cli {
namespace {

namespace fs = std::filesystem;
using testing::read_json;
using testing::read_lines;
using testing::run_vit;

TEST(FiltersCli, FlagsAndDefaults) {
  Cli cli;
  auto o = register_filters(cli);
  cli.parse({"filters", "--count", "5", "--out", "d"});
  EXPECT_EQ(o->count, 5);
  EXPECT_EQ(o->model.out, "d");
  Cli defaults;
  auto d = register_filters(defaults);
  defaults.parse({"filters"});
  EXPECT_EQ(d->count, 28);
  EXPECT_FALSE(d->model.checkpoint.has_value());
  for (const auto& args :
       std::vector<std::vector<std::string>>{{"filters", "--count", "0"},
                                             {"filters", "--count", "x"},
                                             {"filters", "--checkpoint", "/does/not/exist.pt"}}) {
    Cli bad;
    EXPECT_THROW(bad.parse(args), CLI::ParseError) << ::testing::PrintToString(args);
  }
}

// A random 16 px RGB model in 4 px patches (dim 16): 48-long filters, at most 15 components.
TEST(FiltersCli, WritesTheLibrarysPcaAsJsonCsvAndPicture) {
  const fs::path dir =
      fs::temp_directory_path() / ("vit_filters_cli_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const Config config = testing::block_config(dir / "cifar");
  torch::manual_seed(4);
  VisionTransformer model(config.model);
  const std::string weights = (dir / "weights.safetensors").string();
  save_safetensors_weights(weights, model, config);
  EXPECT_EQ(run_vit({"filters", "--checkpoint", weights, "--count", "40", "--threads", "1",
                     "--device", "cpu", "--quiet"}),
            0);
  const fs::path out = dir / "filters";  // the default --out
  const auto j = read_json(out / "filters.json");
  EXPECT_EQ(j["patch_size"], 4);
  EXPECT_EQ(j["channels"], 3);
  ASSERT_EQ(j["components"].size(), 15u);
  ASSERT_EQ(j["explained_variance_ratio"].size(), 15u);
  const auto expected = filter_pca(model->patch_embed->proj->weight, 40);
  for (int64_t i = 0; i < 15; ++i) {
    ASSERT_EQ(j["components"][i].size(), 48u);
    EXPECT_NEAR(j["explained_variance_ratio"][i].get<double>(),
                expected.explained_variance_ratio[i].item<double>(), 1e-9);
    for (int64_t f = 0; f < 48; f += 7)
      EXPECT_NEAR(j["components"][i][f].get<double>(), expected.components[i][f].item<double>(),
                  1e-9);
  }
  const auto csv = read_lines(out / "filters.csv");
  ASSERT_EQ(csv.size(), 16u);
  EXPECT_EQ(csv[0], "component,explained_variance,explained_variance_ratio,cumulative_ratio");
  EXPECT_EQ(csv[15].substr(csv[15].rfind(',') + 1), "1");  // the shares add up
  const auto picture = io::read_image(out / "filters.png", 3, 0);
  EXPECT_GT(picture.size(2), 500);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace vit::cli
