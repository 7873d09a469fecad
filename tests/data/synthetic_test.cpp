#include "vit/data/synthetic.hpp"

#include <ATen/Parallel.h>
#include <gtest/gtest.h>
#include <torch/torch.h>
#include <nlohmann/json.hpp>

#include "error_of.hpp"
#include "vit/config.hpp"
#include "vit/data/data_splits.hpp"

namespace {

using vit::data::make_synthetic;
using vit::data::SyntheticShape;

SyntheticShape shape(int64_t train, int64_t test, int64_t channels, int64_t side, int64_t classes) {
  SyntheticShape s;
  s.train = train;
  s.test = test;
  s.channels = channels;
  s.side = side;
  s.classes = classes;
  return s;
}

// Restores LibTorch's thread count when a test changes it.
class ThreadCount {
 public:
  explicit ThreadCount(int threads) : before_(at::get_num_threads()) {
    at::set_num_threads(threads);
  }
  ~ThreadCount() { at::set_num_threads(before_); }

 private:
  int before_;
};

TEST(Synthetic, GivesTheShapesTypesAndClassNamesAsked) {
  const auto pair = make_synthetic(shape(40, 12, 3, 9, 7), /*seed=*/1);
  EXPECT_EQ(pair.train.images.sizes(), (std::vector<int64_t>{40, 3, 9, 9}));
  EXPECT_EQ(pair.train.images.scalar_type(), torch::kUInt8);
  EXPECT_EQ(pair.test.images.sizes(), (std::vector<int64_t>{12, 3, 9, 9}));
  EXPECT_EQ(pair.train.labels.scalar_type(), torch::kInt64);
  EXPECT_EQ(pair.train.classes, (std::vector<std::string>{"0", "1", "2", "3", "4", "5", "6"}));
  EXPECT_EQ(pair.test.source, "synthetic test");
  EXPECT_GE(pair.train.labels.min().item<int64_t>(), 0);
  EXPECT_LE(pair.train.labels.max().item<int64_t>(), 6);
}

// The bytes are a pure function of (seed, split, index): pinned here, so a
// change of generator or layout shows, whatever the platform.
TEST(Synthetic, ItsBytesArePinnedBySeed) {
  const auto pair = make_synthetic(shape(2, 1, 1, 3, 10), /*seed=*/0);
  const auto first = pair.train.images[0].flatten();
  EXPECT_EQ(first.sizes(), (std::vector<int64_t>{9}));
  EXPECT_TRUE(
      torch::equal(first, torch::tensor({188, 216, 99, 88, 105, 213, 147, 28, 3}, torch::kUInt8)))
      << first;
  EXPECT_EQ(pair.train.labels[0].item<int64_t>(), 6);
}

TEST(Synthetic, IsTheSameForAnyThreadCountAndDiffersBySeedAndSplit) {
  const auto s = shape(64, 16, 3, 8, 10);
  vit::data::DatasetPair one, two;
  {
    ThreadCount threads(1);
    one = make_synthetic(s, 5);
  }
  {
    ThreadCount threads(2);
    two = make_synthetic(s, 5);
  }
  EXPECT_TRUE(torch::equal(one.train.images, two.train.images));
  EXPECT_TRUE(torch::equal(one.train.labels, two.train.labels));
  EXPECT_TRUE(torch::equal(one.test.images, two.test.images));
  EXPECT_FALSE(torch::equal(make_synthetic(s, 6).train.images, one.train.images));
  EXPECT_FALSE(torch::equal(one.train.images.slice(0, 0, 16), one.test.images));
}

TEST(Synthetic, BytesAndLabelsAreUniform) {
  // 2,000 images of 3 x 16 x 16: 1.5 M bytes, mean 127.5 and std 73.9 when
  // uniform (the standard error of the mean is 0.06); 2,000 labels over 4
  // classes, 500 expected each (the standard deviation of a count is 19).
  const auto pair = make_synthetic(shape(2000, 1, 3, 16, 4), 2);
  const auto bytes = pair.train.images.to(torch::kFloat64);
  EXPECT_NEAR(bytes.mean().item<double>(), 127.5, 0.5);
  EXPECT_NEAR(bytes.std().item<double>(), 73.9, 0.5);
  const auto counts = torch::bincount(pair.train.labels, {}, 4);
  for (int k = 0; k < 4; ++k)
    EXPECT_NEAR(counts[k].item<int64_t>(), 500, 100) << "class " << k;
}

TEST(Synthetic, RejectsAnEmptyShape) {
  EXPECT_EQ(vit::testing::error_of([] { make_synthetic(shape(0, 1, 3, 8, 10), 0); }),
            "synthetic data: needs at least one training image, one channel, one pixel and one "
            "class (got 0 train, 1 test, 3x8x8, 10 classes)");
  EXPECT_TRUE(vit::testing::throws_error_containing([] { make_synthetic(shape(4, 1, 3, 8, 0), 0); },
                                                    "0 classes"));
}

TEST(Synthetic, LoadDataSplitsItByTheLimitsAndTheModelsShape) {
  auto config = vit::config_from_json(nlohmann::json::parse(R"({
    "model": {"image_size": 32, "patch_size": 8, "channels": 3, "num_classes": 5},
    "data": {"dataset": "synthetic", "val_size": 20, "limit_train": 100, "limit_test": 30}
  })"));
  const auto splits = vit::data::load_data(config);
  EXPECT_EQ(splits.train.size(), 100);
  EXPECT_EQ(splits.val.size(), 20);
  EXPECT_EQ(splits.test.size(), 30);
  EXPECT_EQ(splits.train.images.sizes(), (std::vector<int64_t>{100, 3, 32, 32}));
  EXPECT_EQ(splits.train.num_classes(), 5);
  EXPECT_EQ(splits.mean, (std::vector<double>{0.5, 0.5, 0.5}));
  EXPECT_EQ(splits.std, (std::vector<double>{0.2898, 0.2898, 0.2898}));
}

}  // namespace
