// Streamed data end to end through the command line: an image folder
// written as WebDataset shards (vit data --write-shards), described, trained
// on with a random resized crop, evaluated, and analysed.
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <iostream>

#include <gtest/gtest.h>
#include <torch/torch.h>
#include <nlohmann/json.hpp>

#include "trained_checkpoint.hpp"
#include "vit/io/image_io.hpp"
#include "vit_test_paths.hpp"

namespace vit::cli {
namespace {

namespace fs = std::filesystem;
using testing::read_json;
using testing::run_vit;

// Class k of 3: a bright square in corner k of a noisy image, of a size of
// its own (20 to 43 pixels a side), as PNG.
void write_folder(const fs::path& dir, int count, int seed) {
  torch::manual_seed(seed);
  for (int i = 0; i < count; ++i) {
    const int k = i % 3, h = 20 + (i * 7) % 24, w = 20 + (i * 11) % 24;
    auto image = torch::randint(0, 60, {3, h, w}, torch::kUInt8);
    const int top = k == 2 ? h / 2 : 0, left = k == 1 ? w / 2 : 0;
    image.narrow(1, top, h / 2).narrow(2, left, w / 2).fill_(230);
    io::write_png(dir / ("class" + std::to_string(k)) / (std::to_string(i) + ".png"), image);
  }
}

class StreamedCli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("vit_streamed_cli_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    write_folder(dir_ / "photos" / "train", 60, 1);
    write_folder(dir_ / "photos" / "val", 15, 2);
    config_ = (dir_ / "streamed.json").string();
    Config c;
    c.name = "streamed";
    c.model.image_size = 16;
    c.model.patch_size = 8;
    c.model.num_classes = 3;
    c.model.dim = 32;
    c.model.depth = 1;
    c.model.heads = 2;
    c.model.mlp_dim = 64;
    c.data.dataset = DatasetKind::kImageFolder;
    c.data.root = (dir_ / "photos").string();
    c.data.val_size = 9;
    c.data.augment.random_resized_crop = RandomResizedCrop{};
    c.data.augment.random_resized_crop->scale = {0.5, 1.0};
    c.data.workers = 2;
    c.train.batch_size = 8;
    c.train.epochs = 2;
    c.train.precision = Precision::kFp32;
    c.train.early_stop_patience = 0;
    std::ofstream(config_) << config_to_json_string(c);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // stdout of one vit command, which must succeed.
  std::string printed(const std::vector<std::string>& args) {
    ::testing::internal::CaptureStdout();
    const int status = run_vit(args);
    const std::string out = ::testing::internal::GetCapturedStdout();
    EXPECT_EQ(status, 0) << out;
    return out;
  }

  fs::path dir_;
  std::string config_;
};

TEST_F(StreamedCli, AFolderBecomesShardsThatTrainEvaluateAndAnalyse) {
  const fs::path shards = dir_ / "shards";
  const std::string written = printed(
      {"data", "--config", config_, "--write-shards", shards.string(), "--shard-size", "16", "-q"});
  EXPECT_NE(written.find("wrote 60 training images to " + shards.string() +
                         "/train-{000000..000003}.tar"),
            std::string::npos)
      << written;
  EXPECT_NE(written.find("wrote 15 validation images to " + shards.string() + "/val-000000.tar"),
            std::string::npos)
      << written;
  EXPECT_TRUE(fs::exists(shards / "classes.txt"));

  const std::vector<std::string> on_shards = {
      "--config", config_,
      "--set",    "data.dataset=webdataset",
      "--set",    "data.root=" + shards.string(),
      "--set",    "data.train_shards=train-{000000..000003}.tar",
      "--set",    "data.val_shards=val-000000.tar",
      "--set",    "data.test_shards=val-000000.tar"};
  auto args = std::vector<std::string>{"data"};
  args.insert(args.end(), on_shards.begin(), on_shards.end());
  args.insert(args.end(), {"--json", "-q"});
  const auto described = nlohmann::json::parse(printed(args));
  EXPECT_EQ(described.at("train"), 60);
  EXPECT_EQ(described.at("val"), 15);
  EXPECT_EQ(described.at("test"), 15);
  EXPECT_EQ(described.at("classes"), nlohmann::json({"class0", "class1", "class2"}));
  EXPECT_EQ(described.at("streamed"), true);
  EXPECT_EQ(described.at("stream_reason"), "webdataset shards are always streamed");
  // Without data.test_shards there is no test split, and nothing to list.
  args.erase(std::find(args.begin(), args.end(), "data.test_shards=val-000000.tar") - 1);
  args.erase(std::find(args.begin(), args.end(), "data.test_shards=val-000000.tar"));
  const auto untested = nlohmann::json::parse(printed(args));
  EXPECT_EQ(untested.at("test"), 0);
  EXPECT_EQ(untested.at("val"), 15);

  const fs::path run = dir_ / "run";
  args = {"train"};
  args.insert(args.end(), on_shards.begin(), on_shards.end());
  args.insert(args.end(), {"--out", run.string(), "--device", "cpu", "--threads", "1", "-q"});
  printed(args);
  const auto summary = read_json(run / "summary.json");
  EXPECT_EQ(summary.at("stop_reason"), "epochs done");
  EXPECT_EQ(summary.at("steps"), 2 * (60 / 8));
  EXPECT_EQ(summary.at("test_images"), 15);

  const std::string checkpoint = (run / "best.pt").string();
  printed({"eval", "--checkpoint", checkpoint, "--split", "val", "--out", (dir_ / "eval").string(),
           "--device", "cpu", "-q"});
  EXPECT_EQ(read_json(dir_ / "eval" / "metrics.json").at("images"), 15);
  EXPECT_TRUE(fs::exists(dir_ / "eval" / "worst.png"));  // decoded from the shard by position
  printed({"attn-distance", "--checkpoint", checkpoint, "--samples", "6", "--out",
           (dir_ / "distance").string(), "--device", "cpu", "-q"});
  EXPECT_EQ(read_json(dir_ / "distance" / "attn_distance.json").at("samples"), 6);
}

TEST_F(StreamedCli, DataBenchTimesTheStreamAndReportsMemory) {
  const std::string out =
      printed({"data", "--config", config_, "--bench", "4", "--device", "cpu", "-q"});
  EXPECT_EQ(out.rfind("pipeline: ", 0), 0u) << out;
  EXPECT_NE(out.find("streamed, 2 workers"), std::string::npos) << out;
  EXPECT_NE(out.find("peak resident memory"), std::string::npos) << out;
}

}  // namespace
}  // namespace vit::cli
