#include "vit/data/data_splits.hpp"

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "error_of.hpp"
#include "vit/error.hpp"
#include "vit/io/image_io.hpp"
#include "vit_test_paths.hpp"

namespace fs = std::filesystem;

namespace {

class LoadDataTest : public ::testing::Test {
 protected:
  // CIFAR-10 with 5 x 20 training and 30 test records. Record i of a file has
  // label i % 10 and flat planes R = 10 + i, G = 100, B = 200.
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("vit_load_" + std::to_string(::getpid()));
    fs::create_directories(root_);
    for (int b = 1; b <= 5; ++b)
      write_batch("data_batch_" + std::to_string(b) + ".bin", 20);
    write_batch("test_batch.bin", 30);
    config_.data.dataset = vit::DatasetKind::kCifar10;
    config_.data.root = root_.string();
    config_.data.val_size = 10;
    config_.seed = 3;
  }
  void TearDown() override { fs::remove_all(root_); }
  void write_batch(const std::string& name, int records) {
    std::ofstream out(root_ / name, std::ios::binary);
    for (int i = 0; i < records; ++i) {
      out.put(static_cast<char>(i % 10));
      for (int value : {10 + i, 100, 200})
        out << std::string(1024, static_cast<char>(value));
    }
  }
  std::string error_of_load() {
    return vit::testing::error_of([&] { vit::data::load_data(config_); });
  }
  fs::path root_;
  vit::Config config_;
};

TEST_F(LoadDataTest, HoldsOutAStratifiedValidationSplit) {
  const auto splits = vit::data::load_data(config_);
  EXPECT_EQ(splits.train.size(), 90);
  EXPECT_EQ(splits.val.size(), 10);
  EXPECT_EQ(splits.test.size(), 30);
  EXPECT_TRUE(
      torch::equal(torch::bincount(splits.val.labels, {}, 10), torch::ones({10}, torch::kInt64)));
  EXPECT_EQ(splits.mean, config_.data.mean);
  // The same seed gives the same split.
  EXPECT_TRUE(torch::equal(vit::data::load_data(config_).val.images, splits.val.images));
}

TEST_F(LoadDataTest, LimitsAreStratifiedSubsetsAndLeaveValAlone) {
  const auto full = vit::data::load_data(config_);
  config_.data.limit_train = 20;
  config_.data.limit_test = 10;
  const auto limited = vit::data::load_data(config_);
  EXPECT_EQ(limited.train.size(), 20);
  EXPECT_EQ(limited.test.size(), 10);
  EXPECT_TRUE(torch::equal(torch::bincount(limited.train.labels, {}, 10),
                           torch::full({10}, 2, torch::kInt64)));
  EXPECT_TRUE(torch::equal(limited.val.images, full.val.images));
}

TEST_F(LoadDataTest, ConformsChannelsAndSize) {
  config_.model.channels = 1;
  config_.model.image_size = 16;
  const auto splits = vit::data::load_data(config_);
  ASSERT_EQ(splits.test.images.sizes(), (std::vector<int64_t>{30, 1, 16, 16}));
  // Test record 5: 0.299 * 15 + 0.587 * 100 + 0.114 * 200 = 85.985 -> 86.
  EXPECT_EQ(splits.test.images[5][0][8][8].item<int>(), 86);
  vit::data::Dataset gray = splits.test;
  const auto rgb = vit::data::conform(gray, 3, 16);
  EXPECT_TRUE(torch::equal(rgb.images.select(1, 2), gray.images.select(1, 0)));
}

TEST_F(LoadDataTest, RejectsImpossibleSettings) {
  config_.model.num_classes = 100;
  EXPECT_EQ(error_of_load(), "model.num_classes is 100 but cifar10 has 10 classes");
  config_.model.num_classes = 10;
  config_.data.val_size = 100;
  EXPECT_EQ(error_of_load(), "data.val_size 100 leaves no training images (cifar10 has 100)");
}

TEST(LoadRealData, FashionMnistFromTheDebianPackage) {
  const std::string root = "/usr/share/datasets/fashion-mnist";
  if (!fs::exists(root + "/train-images-idx3-ubyte.gz"))
    GTEST_SKIP() << root << " is not installed";
  const auto config = vit::load_config(std::string(VIT_SOURCE_DIR) + "/configs/fashion-mnist.json");
  const auto official = vit::data::read_dataset(config.data, config.model, config.seed);
  EXPECT_EQ(official.train.size(), 60000);
  EXPECT_EQ(official.test.size(), 10000);
  const auto splits = vit::data::load_data(config);
  EXPECT_EQ(splits.train.size(), 55000);
  EXPECT_EQ(splits.val.size(), 5000);
  EXPECT_EQ(splits.test.size(), 10000);
  EXPECT_EQ(splits.train.images.sizes(), (std::vector<int64_t>{55000, 1, 28, 28}));
  EXPECT_EQ(splits.test.classes[0], "T-shirt/top");
  EXPECT_EQ(splits.test.classes[9], "Ankle boot");
  // Every class has 6000 training images, so the hold-out takes 500 of each.
  EXPECT_TRUE(torch::equal(torch::bincount(splits.val.labels, {}, 10),
                           torch::full({10}, 500, torch::kInt64)));
}

}  // namespace

namespace {

using vit::testing::error_of;

// An image folder of 40 PNGs of 8 x 8 in two classes (train/ only).
class StreamChoiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("vit_stream_choice_" + std::to_string(::getpid()));
    fs::remove_all(root_);
    for (int i = 0; i < 40; ++i) {
      const auto image = torch::full({3, 8, 8}, i, torch::kUInt8);
      vit::io::write_png(root_ / "train" / (i % 2 ? "b" : "a") / (std::to_string(i) + ".png"),
                         image);
    }
    config_.data.dataset = vit::DatasetKind::kImageFolder;
    config_.data.root = root_.string();
    config_.data.val_size = 4;
    config_.data.mean = {0.5, 0.5, 0.5};
    config_.data.std = {0.5, 0.5, 0.5};
    config_.model.image_size = 32;
    config_.model.patch_size = 8;
    config_.model.num_classes = 2;
  }
  void TearDown() override { fs::remove_all(root_); }
  fs::path root_;
  vit::Config config_;
};

TEST_F(StreamChoiceTest, ARandomResizedCropOrABudgetTooSmallStreamsAndSaysWhy) {
  EXPECT_FALSE(vit::data::load_data(config_).streamed);  // 40 x 3 x 32 x 32 bytes fit
  config_.data.memory_budget_mb = 1;
  EXPECT_FALSE(vit::data::choose_stream(config_, 40).stream);
  const auto big = vit::data::choose_stream(config_, 400);  // 400 x 3072 = 1.17 MiB
  EXPECT_TRUE(big.stream);
  EXPECT_EQ(big.reason,
            "its 400 images would take 1.2 MiB decoded, over data.memory_budget_mb 1.0 MiB");
  config_.data.augment.random_resized_crop = vit::RandomResizedCrop{};
  const auto splits = vit::data::load_data(config_);
  ASSERT_TRUE(splits.streamed);
  EXPECT_EQ(splits.streamed->reason, "data.augment.random_resized_crop crops the original images");
  EXPECT_EQ(splits.train_size(), 36);
  EXPECT_EQ(splits.val_size(), 4);
  EXPECT_EQ(splits.test_size(), 0);
  EXPECT_EQ(splits.classes(), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(splits.train.size(), 0);  // nothing decoded
  config_.data.stream = vit::StreamMode::kOff;
  EXPECT_EQ(error_of([&] { config_.validate(); }),
            "invalid config: data.augment.random_resized_crop crops the original images, which "
            "only the streamed path reads; data.stream is false");
}

// A pretrained model's evaluation (timm's centre crop and Pillow's filter,
// from its hub folder) resizes the original images: the folder streams.
TEST_F(StreamChoiceTest, AnEvaluationTransformOtherThanTheWholeSquashStreams) {
  config_.data.crop_mode = vit::CropMode::kCenter;
  config_.data.interpolation = vit::Interpolation::kBicubic;
  const auto choice = vit::data::choose_stream(config_, 40);
  EXPECT_TRUE(choice.stream);
  EXPECT_EQ(choice.reason,
            "data.crop_mode center (crop_pct 0.875) and data.interpolation bicubic resize the "
            "original images");
  config_.data.stream = vit::StreamMode::kOff;
  EXPECT_EQ(error_of([&] { vit::data::choose_stream(config_, 40); }),
            "data.crop_mode center (crop_pct 0.875) and data.interpolation bicubic resize the "
            "original images, which only the streamed path reads; data.stream is false");
  // Datasets read whole keep their own size: the setting is for predict's images.
  config_.data.dataset = vit::DatasetKind::kCifar10;
  EXPECT_FALSE(vit::data::choose_stream(config_, 40).stream);
}

TEST_F(StreamChoiceTest, OnlyFileByFileDatasetsStream) {
  config_.data.dataset = vit::DatasetKind::kCifar10;
  config_.data.stream = vit::StreamMode::kOn;
  EXPECT_EQ(error_of([&] { vit::data::choose_stream(config_, 0); }),
            "data.stream is true, but cifar10 is read into memory whole; image-folder, "
            "tiny-imagenet and webdataset stream");
  config_.data.stream = vit::StreamMode::kAuto;
  config_.data.augment.random_resized_crop = vit::RandomResizedCrop{};
  EXPECT_EQ(error_of([&] { vit::data::choose_stream(config_, 0); }),
            "data.augment.random_resized_crop needs images read file by file (image-folder, "
            "tiny-imagenet or webdataset); cifar10 is read into memory whole");
}

TEST_F(StreamChoiceTest, StreamedSplitsAreTheInMemorySplitsFiles) {
  config_.data.limit_train = 10;
  const auto memory = vit::data::load_data(config_);
  config_.data.stream = vit::StreamMode::kOn;
  const auto streamed = vit::data::load_data(config_);
  ASSERT_TRUE(streamed.streamed);
  // The same seeded hold-out and limit pick the same images: each PNG's
  // pixels are its index.
  const auto& val = streamed.streamed->val;
  ASSERT_EQ(val.size(), memory.val.size());
  for (int64_t i = 0; i < val.size(); ++i)
    EXPECT_EQ(val.path(i).stem().string(),
              std::to_string(memory.val.images[i][0][0][0].item<int>()));
  EXPECT_EQ(streamed.train_size(), 10);
}

}  // namespace
