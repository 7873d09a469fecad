#include "analyses/cmd_attention.hpp"

#include <unistd.h>

#include <filesystem>

#include <gtest/gtest.h>
#include <torch/torch.h>
#include <nlohmann/json.hpp>

#include "cli/input_images.hpp"
#include "error_of.hpp"
#include "trained_checkpoint.hpp"
#include "vit/analysis/attention_maps.hpp"
#include "vit/io/image_io.hpp"

namespace vit::cli {
namespace {

namespace fs = std::filesystem;
using testing::error_of;
using testing::read_json;
using testing::read_lines;
using testing::run_vit;

class AttentionEndToEnd : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = fs::temp_directory_path() / ("vit_attention_cli_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    testing::write_block_cifar(dir_ / "cifar");
    checkpoint_ =
        testing::train_tiny_checkpoint(testing::block_config(dir_ / "cifar"), dir_ / "run");
    image_ = dir_ / "a.png";
    io::write_png(image_, torch::randint(0, 256, {3, 16, 16}, torch::kLong).to(torch::kUInt8));
  }
  static void TearDownTestSuite() { fs::remove_all(dir_); }

  static void attention(const std::string& out, std::vector<std::string> extra) {
    std::vector<std::string> args = {
        "attention", "--checkpoint", checkpoint_, "--out",  (dir_ / out).string(), "--threads",
        "1",         "--device",     "cpu",       "--quiet"};
    args.insert(args.end(), extra.begin(), extra.end());
    EXPECT_EQ(run_vit(args), 0);
  }

  // The library's maps of image_ for `query`: (L, H, g, g).
  static torch::Tensor expected(const AttentionQuery& query) {
    LoadedModel loaded = load_model(checkpoint_);
    const ImageInputs inputs = load_image_inputs({image_.string()}, loaded.config, c10::kCPU);
    torch::NoGradGuard no_grad;
    return attention_query_maps(loaded.model->forward_with_attention(inputs.normalized).attention,
                                query)[0];
  }

  static void expect_maps(const nlohmann::json& maps, const torch::Tensor& want) {
    ASSERT_EQ(maps.size(), 2u);  // layers
    for (int64_t l = 0; l < 2; ++l) {
      ASSERT_EQ(maps[l].size(), 2u);  // heads
      for (int64_t h = 0; h < 2; ++h)
        for (int64_t r = 0; r < 4; ++r)
          for (int64_t c = 0; c < 4; ++c)
            EXPECT_NEAR(maps[l][h][r][c].get<double>(), want[l][h][r][c].item<double>(), 1e-6);
    }
  }

  static inline fs::path dir_, image_;
  static inline std::string checkpoint_;
};

TEST_F(AttentionEndToEnd, ClassTokenRowByDefault) {
  attention("cls", {"--images", image_.string()});
  const auto j = read_json(dir_ / "cls" / "attention.json");
  EXPECT_EQ(j["layers"], 2);
  EXPECT_EQ(j["heads"], 2);
  EXPECT_EQ(j["query"], "class_token");
  expect_maps(j["maps"], expected(AttentionQuery{}));
  const auto csv = read_lines(dir_ / "cls" / "attention.csv");
  EXPECT_EQ(csv[0], "layer,head,row,column,attention");
  EXPECT_EQ(csv.size(), 1u + 2 * 2 * 16);
  const auto picture = io::read_image(dir_ / "cls" / "attention.png", 3, 0);
  EXPECT_GT(picture.size(2), 2 * 128);  // two heads across
  EXPECT_GT(picture.size(1), 2 * 128);  // two layers down
}

TEST_F(AttentionEndToEnd, QueryPicksOnePatchsRow) {
  attention("patch", {"--images", image_.string(), "--query", "2,1"});
  const auto j = read_json(dir_ / "patch" / "attention.json");
  EXPECT_EQ(j["query"], nlohmann::json::array({2, 1}));
  expect_maps(j["maps"], expected(parse_attention_query("2,1")));
}

TEST_F(AttentionEndToEnd, WithoutImagesOneValidationSample) {
  attention("sample", {});
  const auto j = read_json(dir_ / "sample" / "attention.json");
  EXPECT_EQ(j["image"].get<std::string>().rfind("val:", 0), 0u);
  EXPECT_TRUE(j["label"].is_number_integer());
}

TEST_F(AttentionEndToEnd, BadQueriesAndTooManyImagesAreClearErrors) {
  EXPECT_EQ(error_of([] {
              attention("bad", {"--images", image_.string(), "--query", "4,0"});
            }),
            "attention maps: query patch 4,0 is outside the 4x4 patch grid; rows and columns "
            "count from 0 to 3");
  EXPECT_EQ(error_of([] {
              attention("bad", {"--query", "a,b"});
            }),
            "query 'a,b' is not a patch 'i,j'; expected row and column counted from 0, e.g. 3,4");
  EXPECT_EQ(error_of([] {
              attention("bad", {"--images", image_.string(), image_.string()});
            }),
            "--images: vit attention draws one image; got 2");
}

}  // namespace
}  // namespace vit::cli
