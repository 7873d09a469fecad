#include "vit/data/tiny_imagenet.hpp"

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>
#include <torch/torch.h>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include "error_of.hpp"
#include "vit/error.hpp"

namespace fs = std::filesystem;

namespace {

// Writes a 64 x 64 JPEG: a colour gradient shifted by `seed`, or gray when `gray`.
void write_jpeg(const fs::path& file, int seed, bool gray = false) {
  fs::create_directories(file.parent_path());
  cv::Mat image(64, 64, gray ? CV_8UC1 : CV_8UC3);
  for (int y = 0; y < 64; ++y) {
    for (int x = 0; x < 64; ++x) {
      if (gray) {
        image.at<uint8_t>(y, x) = static_cast<uint8_t>(seed + 2 * x);
      } else {
        image.at<cv::Vec3b>(y, x) = {uint8_t(seed + 3 * x), uint8_t(4 * y),
                                     uint8_t(seed * 5 + x + y)};
      }
    }
  }
  ASSERT_TRUE(cv::imwrite(file.string(), image));
}

// What OpenCV itself decodes from `file`, as RGB (3, 64, 64).
at::Tensor opencv_rgb(const fs::path& file) {
  cv::Mat bgr = cv::imread(file.string(), cv::IMREAD_COLOR);
  cv::Mat rgb;
  cv::cvtColor(bgr, rgb, cv::COLOR_BGR2RGB);
  return torch::from_blob(rgb.data, {64, 64, 3}, torch::kUInt8).permute({2, 0, 1}).clone();
}

class TinyImageNetTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("vit_tiny_" + std::to_string(::getpid()));
    fs::remove_all(root_);
    fs::create_directories(root_ / "val" / "images");
    std::ofstream(root_ / "wnids.txt") << "n01\nn02\nn03\n";
    std::ofstream(root_ / "words.txt")
        << "n01\tgoldfish, Carassius auratus\nn02\tsalamander\nn09\tunused\n";
    for (int k = 1; k <= 3; ++k) {
      const std::string wnid = "n0" + std::to_string(k);
      write_jpeg(root_ / "train" / wnid / "images" / (wnid + "_0.JPEG"), 10 * k, /*gray=*/k == 2);
      write_jpeg(root_ / "train" / wnid / "images" / (wnid + "_1.JPEG"), 10 * k + 5);
      std::ofstream(root_ / "train" / wnid / (wnid + "_boxes.txt"))
          << wnid << "_0.JPEG\t0\t0\t63\t63\n";
    }
    write_jpeg(root_ / "val" / "images" / "val_0.JPEG", 70);
    write_jpeg(root_ / "val" / "images" / "val_1.JPEG", 80);
    std::ofstream(root_ / "val" / "val_annotations.txt")
        << "val_0.JPEG\tn03\t0\t0\t63\t63\nval_1.JPEG\tn01\t1\t2\t60\t61\n";
    options_.cache_dir = (root_ / "elsewhere").string();
  }
  void TearDown() override { fs::remove_all(root_); }

  std::string error_of_load() {
    return vit::testing::error_of([&] { vit::data::load_tiny_imagenet(root_, options_); });
  }
  fs::path cache_file() const { return root_ / ".vit-cache-tiny-imagenet-200.bin"; }

  fs::path root_;
  vit::data::ImageLoadOptions options_;
};

TEST_F(TinyImageNetTest, LoadsTheOfficialLayout) {
  const auto pair = vit::data::load_tiny_imagenet(root_, options_);
  ASSERT_EQ(pair.train.images.sizes(), (std::vector<int64_t>{6, 3, 64, 64}));
  ASSERT_EQ(pair.test.images.sizes(), (std::vector<int64_t>{2, 3, 64, 64}));
  EXPECT_TRUE(torch::equal(pair.train.labels, torch::tensor({0, 0, 1, 1, 2, 2}, torch::kInt64)));
  EXPECT_TRUE(torch::equal(pair.test.labels, torch::tensor({2, 0}, torch::kInt64)));
  EXPECT_EQ(pair.train.classes, (std::vector<std::string>{"goldfish", "salamander", "n03"}));
  EXPECT_TRUE(
      torch::equal(pair.train.images[1], opencv_rgb(root_ / "train/n01/images/n01_1.JPEG")));
  EXPECT_TRUE(torch::equal(pair.test.images[0], opencv_rgb(root_ / "val/images/val_0.JPEG")));
  // The gray image comes back as RGB with three equal planes.
  const auto gray = pair.train.images[2];
  EXPECT_TRUE(torch::equal(gray[0], gray[1]));
  EXPECT_TRUE(torch::equal(gray[0], gray[2]));
  EXPECT_NEAR(gray[0][7][10].item<int>(), 20 + 2 * 10, 2);  // JPEG is lossy: within 2 levels
}

TEST_F(TinyImageNetTest, CachesAndRebuildsWhenAFileChanges) {
  const auto first = vit::data::load_tiny_imagenet(root_, options_);
  ASSERT_TRUE(fs::exists(cache_file()));
  const auto cache_time = fs::last_write_time(cache_file());
  const auto second = vit::data::load_tiny_imagenet(root_, options_);
  EXPECT_EQ(fs::last_write_time(cache_file()), cache_time);  // read, not rewritten
  EXPECT_TRUE(torch::equal(first.train.images, second.train.images));
  EXPECT_TRUE(torch::equal(first.test.labels, second.test.labels));

  write_jpeg(root_ / "train/n03/images/n03_0.JPEG", 200);
  fs::last_write_time(root_ / "train/n03/images/n03_0.JPEG", cache_time + std::chrono::seconds(10));
  const auto third = vit::data::load_tiny_imagenet(root_, options_);
  EXPECT_TRUE(
      torch::equal(third.train.images[4], opencv_rgb(root_ / "train/n03/images/n03_0.JPEG")));
  EXPECT_FALSE(torch::equal(third.train.images[4], first.train.images[4]));

  fs::resize_file(cache_file(), fs::file_size(cache_file()) / 2);  // a damaged cache is rebuilt
  EXPECT_TRUE(torch::equal(vit::data::load_tiny_imagenet(root_, options_).train.images,
                           third.train.images));
}

TEST_F(TinyImageNetTest, UsesTheCacheFolderWhenTheDataFolderRefusesTheCache) {
  fs::create_directories(cache_file());  // a folder in the way makes the beside cache unwritable
  vit::data::load_tiny_imagenet(root_, options_);
  const auto files =
      std::distance(fs::directory_iterator(root_ / "elsewhere"), fs::directory_iterator{});
  EXPECT_EQ(files, 1);
}

TEST_F(TinyImageNetTest, CorruptJpegIsAnErrorOrSkipped) {
  std::ofstream(root_ / "val/images/val_1.JPEG", std::ios::binary)
      << "\xff\xd8\xff\xe0 not really a JPEG";
  const std::string error = error_of_load();
  EXPECT_NE(error.find("val_1.JPEG: cannot decode"), std::string::npos) << error;
  EXPECT_NE(error.find("data.skip_corrupt=true"), std::string::npos) << error;
  EXPECT_FALSE(fs::exists(cache_file()));

  options_.skip_corrupt = true;
  const auto pair = vit::data::load_tiny_imagenet(root_, options_);
  EXPECT_EQ(pair.train.size(), 6);
  ASSERT_EQ(pair.test.size(), 1);
  EXPECT_EQ(pair.test.labels[0].item<int64_t>(), 2);
  // The cache remembers the skipped file, so a strict load still refuses it.
  options_.skip_corrupt = false;
  EXPECT_NE(error_of_load().find("recorded in the cache"), std::string::npos);
}

TEST_F(TinyImageNetTest, RejectsBrokenIndexFiles) {
  std::ofstream(root_ / "val/val_annotations.txt")
      << "val_0.JPEG\tn03\t0\t0\t63\t63\nval_1.JPEG\tn07\t1\n";
  EXPECT_EQ(error_of_load(), (root_ / "val/val_annotations.txt").string() +
                                 " line 2: class n07 is not in wnids.txt");
  std::ofstream(root_ / "val/val_annotations.txt") << "val_0.JPEG n03\n";
  EXPECT_NE(error_of_load().find("line 1: expected <file> TAB <wnid> TAB <box>"),
            std::string::npos);
  std::ofstream(root_ / "wnids.txt") << "n01\nn02\nn01\n";
  EXPECT_EQ(error_of_load(), (root_ / "wnids.txt").string() + " line 3: n01 repeats line 1");
  std::ofstream(root_ / "wnids.txt") << "n01\nn02\nn04\n";
  EXPECT_EQ(error_of_load(), (root_ / "train/n04/images").string() +
                                 ": folder not found (class n04 is listed in wnids.txt)");
  fs::remove(root_ / "wnids.txt");
  EXPECT_NE(error_of_load().find("wnids.txt: file not found"), std::string::npos);
}

TEST_F(TinyImageNetTest, RejectsAnAnnotatedFileThatIsMissing) {
  fs::remove(root_ / "val/images/val_0.JPEG");
  EXPECT_NE(error_of_load().find("val_0.JPEG: file not found"), std::string::npos)
      << error_of_load();
}

}  // namespace
