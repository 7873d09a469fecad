#include "vit/data/image_folder.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include <gtest/gtest.h>
#include <torch/torch.h>
#include <opencv2/imgcodecs.hpp>

#include "as_nobody.hpp"
#include "error_of.hpp"
#include "process.hpp"
#include "vit/data/data_splits.hpp"
#include "vit/error.hpp"
#include "vit/io/image_io.hpp"

namespace fs = std::filesystem;

namespace {

class ImageFolderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("vit_folder_" + std::to_string(::getpid()));
    fs::remove_all(root_);
    options_.use_cache = false;
  }
  void TearDown() override { fs::remove_all(root_); }
  // A 3 x 4 x 4 PNG filled with (value, value + 1, value + 2).
  void write(const fs::path& relative, int value) {
    auto image = torch::tensor({value, value + 1, value + 2}, torch::kUInt8)
                     .view({3, 1, 1})
                     .expand({3, 4, 4});
    vit::io::write_png(root_ / relative, image.contiguous());
  }
  fs::path root_;
  vit::data::ImageLoadOptions options_;
};

// 100,000 class folders list (their labels take four bytes), names up to
// Linux's 255 bytes come back whole, and the class count that the model
// does not have is a one-line error before any image is read.
TEST_F(ImageFolderTest, AHundredThousandClassesAndLongNamesList) {
  constexpr int kClasses = 100000;
  const std::string long_name = std::string(251, 'n') + ".png";  // 255 bytes
  fs::create_directories(root_ / "train");
  for (int k = 0; k < kClasses; ++k) {  // mkdir and open: 100,000 of each in a few seconds
    const fs::path dir = root_ / "train" / std::to_string(1000000 + k);
    ASSERT_EQ(::mkdir(dir.c_str(), 0755), 0) << dir;
    const fs::path file = dir / (k == kClasses - 1 ? long_name : "x.png");
    const int fd = ::open(file.c_str(), O_CREAT | O_WRONLY, 0644);
    ASSERT_GE(fd, 0) << file;
    ::close(fd);
  }
  const auto listing = vit::data::list_image_folder(root_, 3, 4);
  ASSERT_EQ(listing.classes.size(), size_t(kClasses));
  ASSERT_EQ(listing.train.size(), kClasses);
  EXPECT_EQ(listing.train.label(kClasses - 1), kClasses - 1);
  EXPECT_EQ(listing.train.path(kClasses - 1),
            root_ / "train" / std::to_string(1000000 + kClasses - 1) / long_name);
  EXPECT_EQ(listing.train.path(123).filename(), "x.png");

  vit::Config config;
  config.data.dataset = vit::DatasetKind::kImageFolder;
  config.data.root = root_.string();
  config.data.validation = vit::ValidationSource::kHoldout;
  config.data.val_size = 10;
  config.data.stream = vit::StreamMode::kOn;
  config.model.num_classes = 1000;
  EXPECT_EQ(vit::testing::error_of([&] { vit::data::load_data(config); }),
            "model.num_classes is 1000 but image-folder has 100000 classes");
}

// A root whose path passes Linux's 4,096 bytes (PATH_MAX), made folder by
// folder through their descriptors, is a one-line error naming it, not a crash.
TEST_F(ImageFolderTest, ARootPathPastFourThousandBytesIsAOneLineError) {
  fs::create_directories(root_);
  const std::string level(240, 'd');
  fs::path deep = root_;
  int fd = ::open(root_.c_str(), O_RDONLY | O_DIRECTORY);
  ASSERT_GE(fd, 0);
  for (int i = 0; i < 18; ++i) {  // 18 x 241 bytes
    ASSERT_EQ(::mkdirat(fd, level.c_str(), 0755), 0);
    const int next = ::openat(fd, level.c_str(), O_RDONLY | O_DIRECTORY);
    ::close(fd);
    ASSERT_GE(next, 0);
    fd = next;
    deep /= level;
  }
  for (const char* dir : {"train", "train/a"})
    ASSERT_EQ(::mkdirat(fd, dir, 0755), 0);
  const int file = ::openat(fd, "train/a/x.png", O_CREAT | O_WRONLY, 0644);
  ASSERT_GE(file, 0);
  ::close(file);
  ::close(fd);
  ASSERT_GT(deep.string().size(), 4096u);
  const std::string error =
      vit::testing::error_of([&] { vit::data::list_image_folder(deep, 3, 4); });
  EXPECT_EQ(error, deep.string() + ": cannot open the folder (File name too long) (data.root)");
  // std::filesystem cannot remove what it cannot name; rm works through descriptors.
  EXPECT_EQ(std::system(("rm -rf " + root_.string()).c_str()), 0);
}

// A class folder vit may not read stops `vit data` with one line naming it
// (the run as nobody when the tests run as root, who reads anything).
TEST_F(ImageFolderTest, AnUnreadableClassFolderIsAOneLineError) {
  write("train/a/x.png", 10);
  write("train/b/y.png", 20);
  ::chmod((root_ / "train" / "b").c_str(), 0);
  const vit::testing::OtherUser user = vit::testing::as_other_user(
      root_ / "bin", {std::string(VIT_SOURCE_DIR) + "/configs/cifar10.json"});
  if (!user.cannot.empty()) GTEST_SKIP() << user.cannot;
  vit::testing::ChildProcess child(
      {"/bin/sh", "-c",
       user.prefix + " " + user.vit + " data --config " + user.files[0] +
           " --device cpu --set data.dataset=image-folder --set data.root=" + root_.string() +
           " --set model.num_classes=2 --set model.image_size=4 --set model.patch_size=2" +
           " --set data.augment.crop_padding=0"},
      {}, fs::temp_directory_path(), root_ / "vit.log");
  EXPECT_EQ(child.wait(std::chrono::seconds(60)), 1) << child.output();
  EXPECT_NE(child.output().find((root_ / "train" / "b").string() +
                                ": cannot list the folder (Permission denied)"),
            std::string::npos)
      << child.output();
  ::chmod((root_ / "train" / "b").c_str(), 0755);
}

TEST_F(ImageFolderTest, ClassesAreSortedFoldersAndPixelsExact) {
  write("zebra/b.png", 10);
  write("zebra/a.png", 20);
  write("ant/x.png", 30);
  fs::create_directories(root_ / "ant" / "notes");
  const auto pair = vit::data::load_image_folder(root_, /*channels=*/3, /*side=*/4, options_);
  EXPECT_EQ(pair.train.classes, (std::vector<std::string>{"ant", "zebra"}));
  EXPECT_TRUE(torch::equal(pair.train.labels, torch::tensor({0, 1, 1}, torch::kInt64)));
  EXPECT_EQ(pair.train.images[1][0][3][3].item<int>(), 20);  // zebra/a.png sorts before b.png
  EXPECT_EQ(pair.train.images[2][2][0][0].item<int>(), 12);
  EXPECT_EQ(pair.test.size(), 0);
  EXPECT_EQ(pair.test.images.sizes(), (std::vector<int64_t>{0, 3, 4, 4}));
}

TEST_F(ImageFolderTest, TrainAndTestFoldersConvertedToGrayAndResized) {
  write("train/cat/1.png", 100);
  write("train/dog/1.png", 50);
  write("test/dog/9.png", 0);
  const auto pair = vit::data::load_image_folder(root_, /*channels=*/1, /*side=*/2, options_);
  ASSERT_EQ(pair.test.images.sizes(), (std::vector<int64_t>{1, 1, 2, 2}));
  EXPECT_EQ(pair.test.labels[0].item<int64_t>(), 1);
  // Luma of (100, 101, 102): 0.299 * 100 + 0.587 * 101 + 0.114 * 102 = 100.815 -> 101.
  EXPECT_EQ(pair.train.images[0][0][1][1].item<int>(), 101);
}

TEST_F(ImageFolderTest, RejectsUnknownTestClassesAndEmptyFolders) {
  write("train/cat/1.png", 1);
  write("train/dog/1.png", 2);
  write("test/cow/1.png", 3);
  try {
    vit::data::load_image_folder(root_, 3, 4, options_);
    FAIL() << "no error";
  } catch (const vit::Error& e) {
    EXPECT_EQ(std::string(e.what()), (root_ / "test" / "cow").string() +
                                         ": class folder not found among the training classes");
  }
  EXPECT_THROW(vit::data::load_image_folder(root_ / "nothing", 3, 4, options_), vit::Error);
  fs::create_directories(root_ / "empty" / "a");
  fs::create_directories(root_ / "empty" / "b");
  EXPECT_THROW(vit::data::load_image_folder(root_ / "empty", 3, 4, options_), vit::Error);
}

}  // namespace

namespace {

TEST(ImageFolderWebp, WebpFilesAreImagesToo) {
  if (!cv::haveImageWriter(".webp")) GTEST_SKIP() << "this OpenCV has no WebP codec";
  const fs::path root =
      fs::temp_directory_path() / ("vit_folder_webp_" + std::to_string(::getpid()));
  fs::remove_all(root);
  for (const char* cls : {"a", "b"}) {
    fs::create_directories(root / cls);
    cv::imwrite((root / cls / "x.webp").string(), cv::Mat(6, 9, CV_8UC3, cv::Scalar(10, 20, 30)),
                {cv::IMWRITE_WEBP_QUALITY, 101});  // above 100: lossless
  }
  const auto listing = vit::data::list_image_folder(root, 3, 6);
  EXPECT_EQ(listing.train.size(), 2);
  const auto image = vit::io::read_image(listing.train.path(0), 3, 0);
  EXPECT_EQ(image.sizes(), (std::vector<int64_t>{3, 6, 9}));
  EXPECT_EQ(image[0][0][0].item<int>(), 30);  // RGB of OpenCV's BGR (10, 20, 30)
  fs::remove_all(root);
}

}  // namespace
