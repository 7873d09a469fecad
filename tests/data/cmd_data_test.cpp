#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>
#include <torch/torch.h>
#include <nlohmann/json.hpp>

#include "commands/cmd_data.hpp"
#include "vit/io/image_io.hpp"
#include "vit_test_paths.hpp"

namespace fs = std::filesystem;

namespace vit::cli {
namespace {

// `vit data` end to end on a CIFAR-10 fixture of 5 x 40 training and 20 test records.
class CmdDataTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("vit_cmd_data_" + std::to_string(::getpid()));
    fs::create_directories(root_);
    for (const auto& [name, n] : {std::pair{"data_batch_1.bin", 40},
                                  {"data_batch_2.bin", 40},
                                  {"data_batch_3.bin", 40},
                                  {"data_batch_4.bin", 40},
                                  {"data_batch_5.bin", 40},
                                  {"test_batch.bin", 20}}) {
      std::ofstream out(root_ / name, std::ios::binary);
      for (int i = 0; i < n; ++i)
        out << static_cast<char>(i % 10) << std::string(3072, static_cast<char>(i * 9));
    }
  }
  void TearDown() override { fs::remove_all(root_); }
  fs::path root_;
};

TEST_F(CmdDataTest, PrintsTheJsonContractAndWritesSamples) {
  Cli cli;
  auto options = register_data(cli);
  cli.parse({"data", "--config", std::string(VIT_SOURCE_DIR) + "/configs/cifar10.json", "--set",
             "data.root=" + root_.string(), "--set", "data.val_size=50", "--set",
             "data.limit_test=10", "--json", "--out", (root_ / "out").string(), "--device", "cpu",
             "-q"});
  EXPECT_TRUE(options->json);
  EXPECT_EQ(options->out, (root_ / "out").string());
  ::testing::internal::CaptureStdout();
  EXPECT_EQ(cli.run(), 0);
  const auto printed = nlohmann::json::parse(::testing::internal::GetCapturedStdout());
  EXPECT_EQ(printed.at("dataset"), "cifar10");
  EXPECT_EQ(printed.at("train"), 150);
  EXPECT_EQ(printed.at("val"), 50);
  EXPECT_EQ(printed.at("test"), 10);
  EXPECT_EQ(printed.at("classes").size(), 10u);
  EXPECT_EQ(printed.at("classes")[0], "airplane");
  EXPECT_EQ(printed.at("image_shape"), nlohmann::json({3, 32, 32}));
  // 32 tiles in 4 rows of 8: an RGB picture wider than 8 tiles of 96 pixels.
  const auto samples = io::read_image(root_ / "out" / "samples.png", 3, 0);
  EXPECT_GT(samples.size(2), 8 * 96);
  EXPECT_GT(samples.size(1), 4 * 96);
}

}  // namespace
}  // namespace vit::cli
