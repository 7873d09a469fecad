#include "vit/data/cifar.hpp"

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "vit/error.hpp"

namespace fs = std::filesystem;
using vit::data::CifarKind;

namespace {

class CifarTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("vit_cifar_" + std::to_string(::getpid()));
    fs::create_directories(root_);
  }
  void TearDown() override { fs::remove_all(root_); }

  // Record i has label `labels[i]` (and coarse label 7 for CIFAR-100); pixel p of
  // record i holds (i * 7 + p) % 256.
  void write_records(const std::string& name, const std::vector<uint8_t>& labels,
                     bool two_labels = false) {
    std::ofstream out(root_ / name, std::ios::binary);
    for (size_t i = 0; i < labels.size(); ++i) {
      if (two_labels) out.put(7);
      out.put(static_cast<char>(labels[i]));
      for (int p = 0; p < 3072; ++p)
        out.put(static_cast<char>((i * 7 + p) % 256));
    }
  }
  void write_text(const std::string& name, const std::string& text) {
    std::ofstream(root_ / name) << text;
  }
  fs::path root_;
};

TEST_F(CifarTest, ReadsPixelsPlanesAndLabels) {
  write_records("test_batch.bin", {3, 9});
  auto data = vit::data::read_cifar_file(root_ / "test_batch.bin", CifarKind::kCifar10, {"a"});
  ASSERT_EQ(data.images.sizes(), (std::vector<int64_t>{2, 3, 32, 32}));
  EXPECT_EQ(data.images.scalar_type(), torch::kUInt8);
  EXPECT_EQ(data.labels[0].item<int64_t>(), 3);
  EXPECT_EQ(data.labels[1].item<int64_t>(), 9);
  // Record 1: R(0,0) = 7, R(0,5) = 12, G(0,0) = (7 + 1024) % 256 = 7, B(31,31) = (7+3071)%256 = 6.
  EXPECT_EQ(data.images[1][0][0][0].item<int>(), 7);
  EXPECT_EQ(data.images[1][0][0][5].item<int>(), 12);
  EXPECT_EQ(data.images[1][1][0][1].item<int>(), 8);
  EXPECT_EQ(data.images[1][2][31][31].item<int>(), 6);
  EXPECT_EQ(data.images[0][0][1][0].item<int>(), 32);
}

TEST_F(CifarTest, LoadsTheOfficialLayoutWithMetaNames) {
  for (int i = 1; i <= 5; ++i)
    write_records("data_batch_" + std::to_string(i) + ".bin", {uint8_t(i)});
  write_records("test_batch.bin", {0, 1, 2});
  write_text("batches.meta.txt", "zero\none\ntwo\nthree\nfour\nfive\nsix\nseven\neight\nnine\n\n");
  auto pair = vit::data::load_cifar(root_, CifarKind::kCifar10);
  EXPECT_EQ(pair.train.size(), 5);
  EXPECT_EQ(pair.test.size(), 3);
  EXPECT_TRUE(torch::equal(pair.train.labels, torch::tensor({1, 2, 3, 4, 5}, torch::kInt64)));
  ASSERT_EQ(pair.train.classes.size(), 10u);
  EXPECT_EQ(pair.train.classes[2], "two");
  EXPECT_EQ(pair.test.classes[9], "nine");
}

TEST_F(CifarTest, OfficialNamesWhenMetaIsAbsent) {
  EXPECT_EQ(vit::data::cifar_class_names(root_, CifarKind::kCifar10)[1], "automobile");
  const auto names100 = vit::data::cifar_class_names(root_, CifarKind::kCifar100);
  ASSERT_EQ(names100.size(), 100u);
  EXPECT_EQ(names100[0], "apple");
  EXPECT_EQ(names100[99], "worm");
}

TEST_F(CifarTest, Cifar100UsesTheFineLabel) {
  write_records("train.bin", {42, 99}, /*two_labels=*/true);
  write_records("test.bin", {5}, /*two_labels=*/true);
  auto pair = vit::data::load_cifar(root_, CifarKind::kCifar100);
  EXPECT_TRUE(torch::equal(pair.train.labels, torch::tensor({42, 99}, torch::kInt64)));
  EXPECT_EQ(pair.test.labels[0].item<int64_t>(), 5);
  EXPECT_EQ(pair.train.images[1][0][0][0].item<int>(), 7);  // the pixels start after both bytes
}

TEST_F(CifarTest, RejectsASizeThatIsNotWholeRecords) {
  {
    std::ofstream out(root_ / "data_batch_3.bin", std::ios::binary);
    out << std::string(3073 * 2 + 10, '\0');
  }
  try {
    vit::data::read_cifar_file(root_ / "data_batch_3.bin", CifarKind::kCifar10, {});
    FAIL() << "no error";
  } catch (const vit::Error& e) {
    EXPECT_STREQ(e.what(),
                 "data_batch_3.bin: size 6156 is not a multiple of 3073 (CIFAR-10 record = 1 "
                 "label byte + 3072 pixel bytes)");
  }
}

TEST_F(CifarTest, RejectsLabelsOutOfRange) {
  write_records("data_batch_1.bin", {1, 10});
  try {
    vit::data::read_cifar_file(root_ / "data_batch_1.bin", CifarKind::kCifar10, {});
    FAIL() << "no error";
  } catch (const vit::Error& e) {
    EXPECT_STREQ(e.what(), "data_batch_1.bin: label 10 at index 1 is outside 0..9");
  }
  write_records("train.bin", {100}, /*two_labels=*/true);
  EXPECT_THROW(vit::data::read_cifar_file(root_ / "train.bin", CifarKind::kCifar100, {}),
               vit::Error);
}

TEST_F(CifarTest, RejectsAMissingFileAndABadMetaFile) {
  write_records("data_batch_1.bin", {1});
  try {
    vit::data::load_cifar(root_, CifarKind::kCifar10);
    FAIL() << "no error";
  } catch (const vit::Error& e) {
    EXPECT_NE(std::string(e.what()).find("data_batch_2.bin: file not found"), std::string::npos)
        << e.what();
  }
  write_text("batches.meta.txt", "cat\ndog\n");
  try {
    vit::data::cifar_class_names(root_, CifarKind::kCifar10);
    FAIL() << "no error";
  } catch (const vit::Error& e) {
    EXPECT_NE(std::string(e.what()).find("batches.meta.txt: 2 class names, expected 10"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
