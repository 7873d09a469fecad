#include "vit/data/parallel_decode.hpp"

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "vit/error.hpp"
#include "vit/io/image_io.hpp"

namespace fs = std::filesystem;

namespace {

class ParallelDecodeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("vit_decode_" + std::to_string(::getpid()));
    // 300 PNGs (more than one claim of 64 per worker); image i is gray, filled with i % 256.
    for (int i = 0; i < 300; ++i) {
      files_.push_back(root_ / (std::to_string(i) + ".png"));
      vit::io::write_png(files_.back(), torch::full({1, 3, 3}, i % 256, torch::kUInt8));
    }
  }
  void TearDown() override { fs::remove_all(root_); }
  fs::path root_;
  std::vector<fs::path> files_;
};

TEST_F(ParallelDecodeTest, DecodesEveryFileIntoItsSlot) {
  const auto out =
      vit::data::decode_images(files_, /*channels=*/3, /*side=*/3, false, /*workers=*/2);
  ASSERT_EQ(out.images.sizes(), (std::vector<int64_t>{300, 3, 3, 3}));
  const auto expected = torch::arange(300, torch::kInt64).remainder(256).to(torch::kUInt8);
  EXPECT_TRUE(torch::equal(out.images.select(1, 2).select(1, 1).select(1, 0), expected));
  EXPECT_EQ(out.kept.size(), 300u);
  EXPECT_TRUE(out.skipped.empty());
}

TEST_F(ParallelDecodeTest, ACorruptFileFailsOrIsSkipped) {
  std::ofstream(files_[200], std::ios::binary) << "garbage";
  try {
    vit::data::decode_images(files_, 1, 3, false, 2);
    FAIL() << "no error";
  } catch (const vit::Error& e) {
    EXPECT_NE(std::string(e.what()).find(files_[200].string() + ": not a PNG, JPEG"),
              std::string::npos)
        << e.what();
  }
  const auto out = vit::data::decode_images(files_, 1, 3, /*skip_corrupt=*/true, 2);
  ASSERT_EQ(out.images.size(0), 299);
  EXPECT_EQ(out.kept[200], 201);
  EXPECT_EQ(out.images[200][0][0][0].item<int>(), 201);
  ASSERT_EQ(out.skipped.size(), 1u);
}

}  // namespace
