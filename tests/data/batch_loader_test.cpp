#include "vit/data/batch_loader.hpp"

#include <algorithm>
#include <vector>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "vit/data/epoch_order.hpp"
#include "vit/error.hpp"

namespace {

// 10 images of 1 x 4 x 4; image i is filled with the value 10 * i, label i % 3.
vit::data::Dataset tiny_dataset() {
  vit::data::Dataset data;
  data.images = (torch::arange(10, torch::kInt64) * 10)
                    .to(torch::kUInt8)
                    .view({10, 1, 1, 1})
                    .expand({10, 1, 4, 4})
                    .contiguous();
  data.labels = torch::arange(10, torch::kInt64).remainder(3);
  data.classes = {"a", "b", "c"};
  return data;
}

vit::data::LoaderOptions options(bool train) {
  vit::data::LoaderOptions o;
  o.batch_size = 4;
  o.train = train;
  o.seed = 7;
  o.mean = {0.5};
  o.std = {0.25};
  o.augment.crop_padding = 0;
  o.augment.hflip = false;
  return o;
}

TEST(BatchLoader, EvalKeepsOrderAndTheLastPartialBatch) {
  vit::data::BatchLoader loader(tiny_dataset(), options(/*train=*/false));
  ASSERT_EQ(loader.batches_per_epoch(), 3);
  const auto last = loader.batch(0, 2);
  EXPECT_TRUE(torch::equal(last.labels, torch::tensor({2, 0}, torch::kInt64)));  // images 8, 9
  // (80 / 255 - 0.5) / 0.25 and (90 / 255 - 0.5) / 0.25.
  EXPECT_NEAR(last.images[0][0][0][0].item<float>(), (80.0 / 255.0 - 0.5) / 0.25, 1e-5);
  EXPECT_NEAR(last.images[1][0][3][3].item<float>(), (90.0 / 255.0 - 0.5) / 0.25, 1e-5);
  EXPECT_EQ(last.images.scalar_type(), torch::kFloat32);
}

TEST(BatchLoader, TrainingDropsThePartialBatchAndShufflesPerEpoch) {
  vit::data::BatchLoader loader(tiny_dataset(), options(/*train=*/true));
  EXPECT_EQ(loader.batches_per_epoch(), 2);
  const auto order0 = loader.order(0);
  EXPECT_TRUE(torch::equal(std::get<0>(order0.sort()), torch::arange(10, torch::kInt64)));
  EXPECT_FALSE(torch::equal(order0, loader.order(1)));
  EXPECT_FALSE(torch::equal(order0, torch::arange(10, torch::kInt64)));
  // Batch 1 of epoch 0 holds the images at order positions 4..7.
  const auto batch = loader.batch_unnormalized(0, 1);
  const auto expected = order0.slice(0, 4, 8).to(torch::kFloat32) * 10.0f / 255.0f;
  EXPECT_TRUE(torch::allclose(batch.images.select(1, 0).select(1, 0).select(1, 0), expected));
  EXPECT_THROW(loader.batch(0, 2), vit::Error);
}

// torch's DistributedSampler pads its indices with their first ones, as many
// times as needed: 1 image for 4 ranks is that image 4 times.
TEST(EpochOrder, PaddedForRanksRepeatsTheFirstEntriesAsDistributedSamplerDoes) {
  using vit::data::padded_for_ranks;
  EXPECT_EQ(padded_for_ranks({5, 3, 1, 4, 0, 2}, 4),
            (std::vector<int64_t>{5, 3, 1, 4, 0, 2, 5, 3}));
  EXPECT_EQ(padded_for_ranks({5, 3, 1, 4}, 4), (std::vector<int64_t>{5, 3, 1, 4}));
  EXPECT_EQ(padded_for_ranks({7}, 4), (std::vector<int64_t>{7, 7, 7, 7}));
  EXPECT_EQ(padded_for_ranks({2, 9}, 5), (std::vector<int64_t>{2, 9, 2, 9, 2}));
  EXPECT_EQ(vit::data::epoch_batches(10, 4, /*drop_last=*/true), 2);
  EXPECT_EQ(vit::data::epoch_batches(10, 4, /*drop_last=*/false), 3);
  EXPECT_EQ(vit::data::epoch_batches(8, 4, /*drop_last=*/false), 2);
  EXPECT_EQ(vit::data::rank_rows(6, 1, 3), (std::pair<int64_t, int64_t>{2, 4}));
  EXPECT_EQ(vit::data::rank_rows(6, 2, 3), (std::pair<int64_t, int64_t>{4, 6}));
}

// The images of batch `step`, by index (image i holds the value 10 i).
std::vector<int64_t> indices_of(const vit::data::BatchLoader& loader, int64_t epoch, int64_t step) {
  const auto pixels =
      loader.batch_unnormalized(epoch, step).images.select(1, 0).select(1, 0).select(1, 0);  // [0,
                                                                                             // 1]
  const auto index = (pixels * 255.0f / 10.0f).round().to(torch::kInt64);
  return std::vector<int64_t>(index.data_ptr<int64_t>(), index.data_ptr<int64_t>() + index.numel());
}

// data.drop_last false: the epoch's last partial batch trains too, so each of
// the 10 images comes once an epoch, in the order's last 2 rows.
TEST(BatchLoader, KeepingTheLastBatchEveryImageComesOnceAnEpoch) {
  auto o = options(/*train=*/true);
  o.drop_last = false;
  vit::data::BatchLoader loader(tiny_dataset(), o);
  ASSERT_EQ(loader.batches_per_epoch(), 3);
  EXPECT_EQ(loader.batch_rows(0), 4);
  EXPECT_EQ(loader.batch_rows(2), 2);
  for (const int64_t epoch : {0, 1}) {
    std::vector<int64_t> seen;
    for (int64_t step = 0; step < 3; ++step) {
      const auto rows = indices_of(loader, epoch, step);
      EXPECT_EQ(static_cast<int64_t>(rows.size()), loader.batch_rows(step));
      seen.insert(seen.end(), rows.begin(), rows.end());
    }
    std::sort(seen.begin(), seen.end());
    EXPECT_EQ(seen, (std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9})) << "epoch " << epoch;
  }
}

// Three ranks, a global batch of 6: the epoch's order is padded to 12 with
// its first 2 images, as torch's DistributedSampler pads, and each rank
// takes 2 rows of both batches; together they see every image, the 2
// repeats besides. With drop_last (the default) 6 images of one batch.
TEST(BatchLoader, KeepingTheLastBatchRanksPadTheOrderAsDistributedSamplerDoes) {
  for (const bool drop_last : {false, true}) {
    std::vector<int64_t> seen;
    for (int64_t rank = 0; rank < 3; ++rank) {
      auto o = options(/*train=*/true);
      o.batch_size = 6;
      o.drop_last = drop_last;
      o.shard_index = rank;
      o.shard_count = 3;
      vit::data::BatchLoader loader(tiny_dataset(), o);
      ASSERT_EQ(loader.batches_per_epoch(), drop_last ? 1 : 2);
      for (int64_t step = 0; step < loader.batches_per_epoch(); ++step) {
        EXPECT_EQ(loader.batch_rows(step), 2);
        const auto rows = indices_of(loader, 0, step);
        ASSERT_EQ(rows.size(), 2u) << "rank " << rank << ", step " << step;
        seen.insert(seen.end(), rows.begin(), rows.end());
      }
    }
    const auto order = vit::data::BatchLoader(tiny_dataset(), options(true)).order(0);
    std::vector<int64_t> expected(order.data_ptr<int64_t>(), order.data_ptr<int64_t>() + 10);
    if (drop_last) {
      expected.resize(6);
    } else {
      expected.push_back(expected[0]);
      expected.push_back(expected[1]);
    }
    std::sort(seen.begin(), seen.end());
    std::sort(expected.begin(), expected.end());
    EXPECT_EQ(seen, expected) << "drop_last " << drop_last;
  }
}

TEST(BatchLoader, BatchesArePureFunctionsOfSeedEpochAndStep) {
  auto o = options(/*train=*/true);
  o.augment.crop_padding = 1;
  o.augment.hflip = true;
  o.augment.mixup_alpha = 0.5;
  vit::data::BatchLoader first(tiny_dataset(), o);
  vit::data::BatchLoader resumed(tiny_dataset(), o);
  first.batch(0, 0);
  first.batch(0, 1);
  const auto a = first.batch(1, 1);
  const auto b = resumed.batch(1, 1);  // straight to (epoch 1, step 1), like a resumed run
  EXPECT_TRUE(torch::equal(a.images, b.images));
  EXPECT_TRUE(torch::equal(a.labels, b.labels));
  EXPECT_TRUE(torch::equal(a.targets, b.targets));
  o.seed = 8;
  vit::data::BatchLoader other(tiny_dataset(), o);
  EXPECT_FALSE(torch::equal(other.order(1), first.order(1)));
}

TEST(BatchLoader, RejectsMeanOfTheWrongLength) {
  auto o = options(false);
  o.mean = {0.1, 0.2};
  try {
    vit::data::BatchLoader loader(tiny_dataset(), o);
    FAIL() << "no error";
  } catch (const vit::Error& e) {
    EXPECT_STREQ(e.what(), "data.mean: 2 values for 1-channel images, expected 1 value");
  }
}

TEST(BatchLoader, RejectsStdOfTheWrongLengthForRgb) {
  auto data = tiny_dataset();
  data.images = data.images.expand({10, 3, 4, 4}).contiguous();
  auto o = options(false);
  o.mean = {0.5, 0.5, 0.5};
  o.std = {0.2, 0.3};
  try {
    vit::data::BatchLoader loader(data, o);
    FAIL() << "no error";
  } catch (const vit::Error& e) {
    EXPECT_STREQ(e.what(), "data.std: 2 values for 3-channel images, expected 1 or 3 values");
  }
}

TEST(LoaderOptions, FollowTheConfig) {
  vit::Config config;
  config.seed = 4;
  config.train.batch_size = 32;
  config.data.augment.crop_padding = 7;
  const auto train = vit::data::loader_options(config, c10::kCPU, /*train=*/true);
  EXPECT_EQ(train.batch_size, 32);
  EXPECT_EQ(train.seed, 4u);
  EXPECT_EQ(train.augment.crop_padding, 7);
  EXPECT_EQ(vit::data::loader_options(config, c10::kCPU, false).batch_size, 64);
  config.train.eval_batch_size = 100;
  const auto eval = vit::data::loader_options(config, c10::kCPU, false);
  EXPECT_EQ(eval.batch_size, 100);
  EXPECT_FALSE(eval.train);
  EXPECT_EQ(eval.mean, config.data.mean);
}

}  // namespace
