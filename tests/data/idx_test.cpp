#include "vit/data/idx.hpp"

#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <torch/torch.h>
#include <zlib.h>

#include "error_of.hpp"
#include "vit/error.hpp"

namespace fs = std::filesystem;

namespace {

std::string big_endian(uint32_t v) {
  return {char(v >> 24), char((v >> 16) & 255), char((v >> 8) & 255), char(v & 255)};
}

// An IDX file: magic, dims, then payload bytes.
std::string idx_bytes(uint32_t magic, const std::vector<uint32_t>& dims,
                      const std::string& payload) {
  std::string out = big_endian(magic);
  for (uint32_t d : dims)
    out += big_endian(d);
  return out + payload;
}

// Two 2 x 3 images with pixel (i, y, x) = 10 * i + 3 * y + x, and their labels.
const std::string kPixels = {0, 1, 2, 3, 4, 5, 10, 11, 12, 13, 14, 15};

class IdxTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("vit_idx_" + std::to_string(::getpid()));
    fs::create_directories(root_);
  }
  void TearDown() override { fs::remove_all(root_); }
  void write(const std::string& name, const std::string& bytes, bool gzip = false) {
    if (gzip) {
      gzFile f = gzopen((root_ / name).c_str(), "wb");
      gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size()));
      gzclose(f);
    } else {
      std::ofstream(root_ / name, std::ios::binary) << bytes;
    }
  }
  void write_split(const std::string& prefix, bool gzip) {
    const std::string ext = gzip ? ".gz" : "";
    write(prefix + "-images-idx3-ubyte" + ext, idx_bytes(2051, {2, 2, 3}, kPixels), gzip);
    write(prefix + "-labels-idx1-ubyte" + ext, idx_bytes(2049, {2}, {7, 0}), gzip);
  }
  static std::string error_of(const std::function<void()>& f) { return vit::testing::error_of(f); }
  fs::path root_;
};

TEST_F(IdxTest, ReadsPlainAndGzippedFiles) {
  write_split("train", /*gzip=*/true);
  write_split("t10k", /*gzip=*/false);
  auto pair = vit::data::load_mnist(root_, vit::DatasetKind::kFashionMnist);
  ASSERT_EQ(pair.train.images.sizes(), (std::vector<int64_t>{2, 1, 2, 3}));
  EXPECT_EQ(pair.train.images[1][0][1][2].item<int>(), 15);
  EXPECT_EQ(pair.test.images[0][0][1][0].item<int>(), 3);
  EXPECT_TRUE(torch::equal(pair.train.labels, torch::tensor({7, 0}, torch::kInt64)));
  EXPECT_EQ(pair.train.classes[0], "T-shirt/top");
  EXPECT_EQ(pair.train.classes[9], "Ankle boot");
  EXPECT_EQ(vit::data::load_mnist(root_, vit::DatasetKind::kMnist).test.classes[7], "7");
}

TEST_F(IdxTest, RejectsBadMagic) {
  write("x", idx_bytes(2049, {2, 2, 3}, kPixels));
  EXPECT_EQ(error_of([&] { vit::data::read_idx_images(root_ / "x"); }),
            "x: bad magic number 2049, expected 2051 (IDX images file)");
}

TEST_F(IdxTest, RejectsTruncatedAndOverlongFiles) {
  write("short.gz", idx_bytes(2051, {3, 2, 3}, kPixels), /*gzip=*/true);
  EXPECT_EQ(error_of([&] { vit::data::read_idx_images(root_ / "short.gz"); }),
            "short.gz: truncated, 12 bytes after the 16-byte header, expected 18 (3 x 2 x 3)");
  write("long", idx_bytes(2049, {1}, {1, 2}));
  EXPECT_EQ(error_of([&] { vit::data::read_idx_labels(root_ / "long"); }),
            "long: trailing data, 2 bytes after the 8-byte header, expected 1 (1)");
  write("tiny", std::string(2, '\0'));
  EXPECT_EQ(error_of([&] { vit::data::read_idx_labels(root_ / "tiny"); }),
            "tiny: 2 bytes is too short for an IDX header (4-byte magic number)");
}

// No images, of sides whose strides overflow int64: LibTorch crashed copying
// the empty tensor (found by fuzz_idx; tests/fuzz_regressions/idx/ holds it).
TEST_F(IdxTest, RejectsImageSidesNoImageHas) {
  write("wide", idx_bytes(2051, {0, 3173800479u, 4236181504u}, ""));
  EXPECT_EQ(error_of([&] { vit::data::read_idx_images(root_ / "wide"); }),
            "wide: dimension 1 is 3173800479, more than the 65536 pixels an image side may have");
  write("edge", idx_bytes(2051, {0, 1, 65536}, ""));
  EXPECT_EQ(vit::data::read_idx_images(root_ / "edge").sizes(),
            (std::vector<int64_t>{0, 1, 1, 65536}));
}

TEST_F(IdxTest, RejectsACutOffGzipStream) {
  write("full.gz", idx_bytes(2051, {2, 2, 3}, kPixels), /*gzip=*/true);
  const auto size = fs::file_size(root_ / "full.gz");
  fs::resize_file(root_ / "full.gz", size - 10);
  EXPECT_NE(error_of([&] {
              vit::data::read_idx_images(root_ / "full.gz");
            }).find("full.gz: damaged gzip data"),
            std::string::npos);
}

TEST_F(IdxTest, RejectsCountMismatchAndLabelsOutOfRange) {
  write_split("t10k", false);
  write("train-images-idx3-ubyte", idx_bytes(2051, {2, 2, 3}, kPixels));
  write("train-labels-idx1-ubyte", idx_bytes(2049, {3}, {1, 2, 3}));
  EXPECT_EQ(error_of([&] { vit::data::load_mnist(root_, vit::DatasetKind::kMnist); }),
            "train-labels-idx1-ubyte: 3 labels but train-images-idx3-ubyte has 2 images");
  write("train-labels-idx1-ubyte", idx_bytes(2049, {2}, {1, 12}));
  EXPECT_EQ(error_of([&] { vit::data::load_mnist(root_, vit::DatasetKind::kMnist); }),
            "train-labels-idx1-ubyte: label 12 at index 1 is outside 0..9");
}

TEST_F(IdxTest, RejectsAMissingFile) {
  EXPECT_NE(error_of([&] {
              vit::data::load_mnist(root_, vit::DatasetKind::kMnist);
            }).find("train-images-idx3-ubyte[.gz]: file not found"),
            std::string::npos);
}

}  // namespace
