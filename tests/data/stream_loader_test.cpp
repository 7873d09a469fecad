#include "vit/data/stream_loader.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <set>

#include <gtest/gtest.h>
#include <torch/torch.h>
#include <opencv2/imgcodecs.hpp>

#include "error_of.hpp"
#include "vit/data/brace_pattern.hpp"
#include "vit/data/epoch_order.hpp"
#include "vit/data/webdataset.hpp"
#include "vit/error.hpp"
#include "vit/io/image_io.hpp"

namespace fs = std::filesystem;

namespace {

using vit::data::LoaderOptions;
using vit::data::StreamedSplit;
using vit::data::StreamLoader;
using vit::data::StreamSettings;

constexpr int64_t kImages = 48;

// `options` as rank `rank` of `ranks` sees them.
LoaderOptions on_rank(LoaderOptions options, int64_t rank, int64_t ranks) {
  options.shard_index = rank;
  options.shard_count = ranks;
  return options;
}

// Image i: a flat PNG of colour (i, 100 + i / 2, 77) and of its own size,
// from 30 x 41 to 61 x 72 pixels, so every crop of it names it.
class StreamLoaderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("vit_stream_" + std::to_string(::getpid()));
    fs::remove_all(root_);
    for (int64_t i = 0; i < kImages; ++i) {
      const auto path = root_ / (std::to_string(i) + ".png");
      const int64_t h = 30 + i % 32, w = 41 + (i * 7) % 32;
      const auto colour =
          torch::tensor({i, 100 + i / 2, int64_t{77}}, torch::kUInt8).view({3, 1, 1});
      vit::io::write_png(path, colour.expand({3, h, w}).contiguous());
      files_.push_back(path);
      labels_.push_back(i % 3);
    }
    settings_.channels = 3;
    settings_.side = 16;
    settings_.random_resized_crop = vit::RandomResizedCrop{};
    options_.batch_size = 8;
    options_.seed = 5;
    options_.mean = {0.5};
    options_.std = {0.25};
    options_.augment.crop_padding = 0;
    options_.augment.hflip = false;
  }
  void TearDown() override { fs::remove_all(root_); }

  // The image each row of a [0, 1] batch shows, from its red channel.
  static std::vector<int64_t> identities(const vit::data::Batch& batch) {
    const auto red = batch.images.select(1, 0).mean({1, 2}).mul(255).round().to(torch::kInt64);
    return std::vector<int64_t>(red.data_ptr<int64_t>(), red.data_ptr<int64_t>() + red.numel());
  }

  fs::path root_;
  // The files as a split, listed afresh: the tests rewrite files_.
  StreamedSplit split() const {
    auto list = std::make_shared<vit::data::FileList>(3);
    for (size_t i = 0; i < files_.size(); ++i)
      list->add(files_[i].parent_path(), files_[i].filename().string(), labels_[i]);
    return StreamedSplit::of_files(list, {"a", "b", "c"}, "test files");
  }

  std::vector<fs::path> files_;
  std::vector<int64_t> labels_;
  StreamSettings settings_;
  LoaderOptions options_;
};

TEST_F(StreamLoaderTest, EachImageOnceAnEpochInTheInMemoryPathsOrderForAnyWorkerCount) {
  std::vector<at::Tensor> first;
  for (const int64_t workers : {1, 2, 4}) {
    settings_.workers = workers;
    const StreamLoader loader(split(), options_, settings_);
    ASSERT_EQ(loader.batches_per_epoch(), kImages / 8);
    std::vector<at::Tensor> batches;
    for (int64_t epoch = 0; epoch < 2; ++epoch) {
      std::vector<int64_t> seen;
      for (int64_t step = 0; step < loader.batches_per_epoch(); ++step) {
        const auto batch = loader.batch_unnormalized(epoch, step);
        ASSERT_EQ(batch.images.sizes(), (std::vector<int64_t>{8, 3, 16, 16}));
        for (const int64_t i : identities(batch))
          seen.push_back(i);
        for (int64_t r = 0; r < 8; ++r)
          EXPECT_EQ(batch.labels[r].item<int64_t>(), seen[step * 8 + r] % 3);
        batches.push_back(batch.images);
      }
      EXPECT_EQ(seen, vit::data::epoch_order(kImages, options_.seed, epoch)) << workers;
      EXPECT_EQ(std::set<int64_t>(seen.begin(), seen.end()).size(), size_t(kImages));
    }
    if (first.empty()) {
      first = batches;
    } else {
      for (size_t b = 0; b < batches.size(); ++b)
        EXPECT_TRUE(torch::equal(batches[b], first[b])) << workers << " workers, batch " << b;
    }
  }
}

// Photographs, so that the crops show: the same crops for any worker count,
// and a restart in the middle of an epoch gives the batch an unbroken pass gave.
TEST_F(StreamLoaderTest, CropsFollowTheSeedAndAResumedStreamRejoinsIt) {
  for (int64_t i = 0; i < kImages; ++i) {
    auto image = torch::randint(0, 256, {3, 40 + i, 90 - i}, torch::kUInt8);
    vit::io::write_png(files_[i], image);
  }
  settings_.workers = 3;
  const StreamLoader loader(split(), options_, settings_);
  std::vector<at::Tensor> pass;
  for (int64_t step = 0; step < 6; ++step)
    pass.push_back(loader.batch_unnormalized(0, step).images);
  for (int64_t step = 0; step < 3; ++step)
    pass.push_back(loader.batch_unnormalized(1, step).images);
  settings_.workers = 1;
  const StreamLoader resumed(split(), options_, settings_);
  EXPECT_TRUE(torch::equal(resumed.batch_unnormalized(1, 1).images, pass[7]));
  EXPECT_TRUE(torch::equal(resumed.batch_unnormalized(1, 2).images, pass[8]));
  EXPECT_TRUE(torch::equal(resumed.batch_unnormalized(0, 4).images, pass[4]));  // back again
  EXPECT_FALSE(torch::equal(pass[0], pass[1]));
  // Another seed, other crops of the same images.
  options_.seed = 6;
  const StreamLoader other(split(), options_, settings_);
  EXPECT_FALSE(torch::equal(other.batch_unnormalized(0, 0).images, pass[0]));
}

// JPEGs large enough that each random resized crop is decoded as a region
// of the file at a reduced scale (libjpeg's region decode, io/jpeg_region),
// with flips: one worker and three give bit-identical batches. Bit-exact by
// construction: each image's crop and flip are drawn from its own stream
// (seed, epoch, position), and its decode and normalisation are the same
// arithmetic whichever thread runs them.
TEST_F(StreamLoaderTest, JpegRegionsWithFlipsAreTheSameForOneWorkerAndThree) {
  torch::manual_seed(3);
  for (int64_t i = 0; i < kImages; ++i) {
    // A smooth gradient under noise, 120-167 x 150-197 pixels: no two crops alike.
    const int64_t h = 120 + i, w = 197 - i;
    const auto ramp = torch::linspace(0, 200, w).view({1, 1, w}).expand({3, h, w});
    const auto image = (ramp + torch::randint(0, 56, {3, h, w})).to(torch::kUInt8);
    const auto hwc = image.permute({1, 2, 0}).contiguous();
    const cv::Mat mat(int(h), int(w), CV_8UC3, hwc.data_ptr<uint8_t>());
    std::vector<uint8_t> bytes;
    ASSERT_TRUE(cv::imencode(".jpg", mat, bytes, {cv::IMWRITE_JPEG_QUALITY, 90}));
    files_[i] = root_ / (std::to_string(i) + ".jpg");
    std::ofstream(files_[i], std::ios::binary)
        .write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
  }
  const auto two_epochs = [&](int64_t workers, bool hflip) {
    settings_.workers = workers;
    options_.augment.hflip = hflip;
    const StreamLoader loader(split(), options_, settings_);
    std::vector<at::Tensor> batches;
    for (int64_t epoch = 0; epoch < 2; ++epoch)
      for (int64_t step = 0; step < loader.batches_per_epoch(); ++step)
        batches.push_back(loader.batch(epoch, step).images);
    return batches;
  };
  const auto one = two_epochs(1, /*hflip=*/true);
  const auto three = two_epochs(3, /*hflip=*/true);
  ASSERT_EQ(one.size(), size_t(2 * kImages / 8));
  ASSERT_EQ(three.size(), one.size());
  for (size_t b = 0; b < one.size(); ++b)
    EXPECT_TRUE(torch::equal(one[b], three[b])) << "batch " << b;
  EXPECT_FALSE(torch::equal(one[0], one[kImages / 8]));  // epoch 1 crops anew

  // The flips are there: without them each row is the same crop, mirrored
  // where the flip was drawn (it is drawn after the crop, from the same
  // stream), and both kinds of row occur.
  const auto unflipped = two_epochs(3, /*hflip=*/false);
  int64_t flipped = 0, kept = 0;
  for (size_t b = 0; b < one.size(); ++b) {
    for (int64_t r = 0; r < one[b].size(0); ++r) {
      const auto row = one[b][r], plain = unflipped[b][r];
      if (torch::equal(row, plain)) {
        ++kept;
      } else {
        EXPECT_TRUE(torch::equal(row, plain.flip({-1}))) << "batch " << b << ", row " << r;
        ++flipped;
      }
    }
  }
  EXPECT_GT(flipped, 0);
  EXPECT_GT(kept, 0);
}

// data.drop_last false, batches of 10: the epoch's fifth batch holds the
// order's last 8 images, so each of the 48 comes once an epoch, in the
// in-memory path's order, for one worker or two.
TEST_F(StreamLoaderTest, KeepingTheLastBatchEveryImageComesOnceAnEpoch) {
  options_.batch_size = 10;
  options_.drop_last = false;
  for (const int64_t workers : {1, 2}) {
    settings_.workers = workers;
    const StreamLoader loader(split(), options_, settings_);
    ASSERT_EQ(loader.batches_per_epoch(), 5);
    EXPECT_EQ(loader.batch_rows(3), 10);
    EXPECT_EQ(loader.batch_rows(4), 8);
    std::vector<int64_t> seen;
    for (int64_t step = 0; step < 5; ++step) {
      const auto ids = identities(loader.batch_unnormalized(1, step));
      EXPECT_EQ(static_cast<int64_t>(ids.size()), loader.batch_rows(step));
      seen.insert(seen.end(), ids.begin(), ids.end());
    }
    EXPECT_EQ(seen, vit::data::epoch_order(kImages, options_.seed, 1)) << workers << " workers";
  }
}

// Five ranks, a global batch of 10, keeping the last batch: the order is
// padded to 50 with its first 2 images (torch's DistributedSampler), every
// rank decodes 2 rows of each of the 5 batches, and together they read each
// image, the 2 repeats besides.
TEST_F(StreamLoaderTest, KeepingTheLastBatchRanksPadTheOrderAsDistributedSamplerDoes) {
  options_.batch_size = 10;
  options_.drop_last = false;
  std::vector<int64_t> seen;
  for (int64_t rank = 0; rank < 5; ++rank) {
    const StreamLoader loader(split(), on_rank(options_, rank, 5), settings_);
    ASSERT_EQ(loader.batches_per_epoch(), 5);
    EXPECT_EQ(loader.size(), 10);
    for (int64_t step = 0; step < 5; ++step) {
      const auto ids = identities(loader.batch_unnormalized(0, step));
      ASSERT_EQ(ids.size(), 2u) << "rank " << rank << ", step " << step;
      seen.insert(seen.end(), ids.begin(), ids.end());
    }
  }
  auto expected = vit::data::epoch_order(kImages, options_.seed, 0);
  expected.push_back(expected[0]);
  expected.push_back(expected[1]);
  std::sort(seen.begin(), seen.end());
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(seen, expected);
}

TEST_F(StreamLoaderTest, TwoRanksDecodeDisjointRowsOfEachGlobalBatch) {
  const StreamLoader alone(split(), options_, settings_);
  const StreamLoader first(split(), on_rank(options_, 0, 2), settings_),
      second(split(), on_rank(options_, 1, 2), settings_);
  EXPECT_EQ(first.local_batch_size(), 4);
  EXPECT_EQ(first.batches_per_epoch(), alone.batches_per_epoch());
  std::set<int64_t> seen;
  for (int64_t step = 0; step < alone.batches_per_epoch(); ++step) {
    const auto a = first.batch_unnormalized(0, step), b = second.batch_unnormalized(0, step);
    // With no batch-level randomness (no flip, RandAugment or mixing), the
    // two halves are the one process's batch.
    EXPECT_TRUE(
        torch::equal(torch::cat({a.images, b.images}), alone.batch_unnormalized(0, step).images));
    for (const auto& batch : {a, b})
      for (const int64_t i : identities(batch))
        EXPECT_TRUE(seen.insert(i).second) << i;
  }
  EXPECT_EQ(seen.size(), size_t(kImages));
}

TEST_F(StreamLoaderTest, EvaluationReadsEveryFileInOrderWithAPartialLastBatch) {
  options_.train = false;
  options_.batch_size = 20;
  const StreamLoader loader(split(), options_, settings_);
  ASSERT_EQ(loader.batches_per_epoch(), 3);
  for (int pass = 0; pass < 2; ++pass) {  // the second pass restarts the stream
    std::vector<int64_t> seen;
    for (int64_t step = 0; step < 3; ++step)
      for (const int64_t i : identities(loader.batch_unnormalized(0, step)))
        seen.push_back(i);
    std::vector<int64_t> expected(kImages);
    std::iota(expected.begin(), expected.end(), 0);
    EXPECT_EQ(seen, expected);
  }
  // The normalised batch: (p / 255 - 0.5) / 0.25.
  const auto batch = loader.batch(0, 0);
  EXPECT_NEAR(batch.images[3][2][0][0].item<float>(), (77 / 255.0 - 0.5) / 0.25, 1e-5);
}

TEST_F(StreamLoaderTest, ACorruptImageStopsTheRunNamingItOrIsReplacedByItsNeighbour) {
  { std::ofstream(files_[5], std::ios::binary) << "not an image"; }
  options_.train = false;
  options_.batch_size = 8;
  const StreamLoader strict(split(), options_, settings_);
  EXPECT_TRUE(vit::testing::throws_error_containing([&] { strict.batch(0, 0); },
                                                    files_[5].string() + ": not a PNG"));
  settings_.skip_corrupt = true;
  const StreamLoader lenient(split(), options_, settings_);
  const auto batch = lenient.batch_unnormalized(0, 0);
  EXPECT_EQ(identities(batch), (std::vector<int64_t>{0, 1, 2, 3, 4, 6, 6, 7}));
  EXPECT_EQ(batch.labels[5].item<int64_t>(), 6 % 3);
}

TEST_F(StreamLoaderTest, RefusesImpossibleOptions) {
  options_.batch_size = 6;
  options_.shard_count = 4;
  EXPECT_EQ(vit::testing::error_of([&] { StreamLoader(split(), options_, settings_); }),
            "train.batch_size 6 is not divisible by the 4 ranks (WORLD_SIZE): train.batch_size "
            "is the global batch, which the ranks split evenly");
  options_.shard_count = 1;
  const StreamLoader loader(split(), options_, settings_);
  EXPECT_EQ(vit::testing::error_of([&] { loader.batch(0, 99); }),
            "stream loader: step 99 is outside 0..7 of an epoch");
}

}  // namespace

namespace {

// The same 48 images written as WebDataset shards of 10 (the last holds 8).
class ShardStreamTest : public StreamLoaderTest {
 protected:
  void SetUp() override {
    StreamLoaderTest::SetUp();
    std::vector<vit::data::ShardInput> inputs;
    for (int64_t i = 0; i < kImages; ++i)
      inputs.push_back({files_[i], labels_[i]});
    const std::string pattern = vit::data::write_shards(inputs, root_ / "shards", "train", 10);
    EXPECT_EQ(pattern, "train-{000000..000004}.tar");
    shards_.classes = {"a", "b", "c"};
    shards_.source = "test shards";
    shards_.shards = vit::data::shard_files(pattern, root_ / "shards", "test");
    for (const auto& shard : shards_.shards)
      shards_.shard_samples.push_back(vit::data::count_shard_samples(shard, {}));
    EXPECT_EQ(shards_.size(), kImages);
  }
  StreamedSplit shards_;
};

TEST_F(ShardStreamTest, EachSampleOnceAnEpochTheSameForAnyWorkerCount) {
  settings_.shuffle_buffer = 16;
  std::vector<std::vector<int64_t>> orders;
  for (const int64_t workers : {1, 3}) {
    settings_.workers = workers;
    const StreamLoader loader(shards_, options_, settings_);
    ASSERT_EQ(loader.batches_per_epoch(), kImages / 8);
    for (int64_t epoch = 0; epoch < 2; ++epoch) {
      std::vector<int64_t> seen;
      for (int64_t step = 0; step < loader.batches_per_epoch(); ++step) {
        const auto batch = loader.batch_unnormalized(epoch, step);
        const auto ids = identities(batch);
        for (size_t r = 0; r < ids.size(); ++r) {
          EXPECT_EQ(batch.labels[int64_t(r)].item<int64_t>(), ids[r] % 3);
          seen.push_back(ids[r]);
        }
      }
      EXPECT_EQ(std::set<int64_t>(seen.begin(), seen.end()).size(), size_t(kImages));
      orders.push_back(seen);
    }
  }
  EXPECT_EQ(orders[0], orders[2]);  // 1 and 3 workers, epoch 0
  EXPECT_EQ(orders[1], orders[3]);
  EXPECT_NE(orders[0], orders[1]);  // epochs shuffle differently
  // Shuffled beyond one shard: the first batch mixes images of several shards.
  std::set<int64_t> shards_in_first_batch;
  for (int64_t r = 0; r < 8; ++r)
    shards_in_first_batch.insert(orders[0][r] / 10);
  EXPECT_GE(shards_in_first_batch.size(), 2u);
}

// 40 samples of about 1 MiB (noise PNGs of 600 x 600) through a shuffle
// buffer of 2,000 samples: capped at 16 MiB it stops filling there (it holds
// at most the cap plus the sample read last), where uncapped it takes all 40
// before the first leaves; either way each sample comes once an epoch.
TEST_F(StreamLoaderTest, AShuffleBufferStopsFillingAtItsByteCap) {
  torch::manual_seed(1);
  std::vector<vit::data::ShardInput> inputs;
  int64_t largest = 0, smallest = int64_t{1} << 40;
  for (int64_t i = 0; i < 40; ++i) {
    const auto path = root_ / "big" / (std::to_string(i) + ".png");
    vit::io::write_png(path, torch::randint(0, 256, {3, 600, 600}, torch::kUInt8));
    largest = std::max(largest, int64_t(fs::file_size(path)));
    smallest = std::min(smallest, int64_t(fs::file_size(path)));
    inputs.push_back({path, i % 3});
  }
  ASSERT_GT(smallest, int64_t{1} << 20);
  StreamedSplit big;
  big.classes = {"a", "b", "c"};
  big.source = "big shards";
  big.shards = vit::data::shard_files(
      vit::data::write_shards(inputs, root_ / "big-shards", "big", 10), root_ / "big-shards", "t");
  for (const auto& shard : big.shards)
    big.shard_samples.push_back(vit::data::count_shard_samples(shard, {}));
  settings_.shuffle_buffer = 2000;
  settings_.workers = 2;
  const auto peak_for = [&](int64_t cap) {
    settings_.shuffle_buffer_bytes = cap;
    const StreamLoader loader(big, options_, settings_);
    std::vector<int64_t> counts(3, 0);
    for (int64_t step = 0; step < loader.batches_per_epoch(); ++step) {
      const auto labels = loader.batch_unnormalized(0, step).labels;
      for (int64_t r = 0; r < labels.size(0); ++r)
        ++counts[labels[r].item<int64_t>()];
    }
    EXPECT_EQ(counts, (std::vector<int64_t>{14, 13, 13})) << "cap " << cap;
    const auto bytes = loader.pipeline_bytes();
    EXPECT_EQ(bytes->shuffle_buffer_cap, cap);
    return bytes->shuffle_buffer_peak;
  };
  const int64_t cap = int64_t{16} << 20;
  const int64_t capped = peak_for(cap);
  EXPECT_GE(capped, cap);
  EXPECT_LE(capped, cap + largest);
  EXPECT_GE(peak_for(int64_t{1} << 30), 40 * smallest);
}

TEST_F(ShardStreamTest, AResumedStreamReadsUpToItsStepAndRejoins) {
  settings_.workers = 2;
  const StreamLoader loader(shards_, options_, settings_);
  std::vector<at::Tensor> pass;
  for (int64_t step = 0; step < loader.batches_per_epoch(); ++step)
    pass.push_back(loader.batch_unnormalized(1, step).images);
  const StreamLoader resumed(shards_, options_, settings_);
  EXPECT_TRUE(torch::equal(resumed.batch_unnormalized(1, 4).images, pass[4]));
  EXPECT_TRUE(torch::equal(resumed.batch_unnormalized(1, 5).images, pass[5]));
}

// Shards of 20, 4, 20 and 4 samples on two ranks: in turn (rank r the
// shards r, r + 2) one rank would hold 40 samples and the other 8, and an
// epoch would be 2 steps of 4; each shard to the rank with the fewest so
// far, the largest first, gives each 24, and an epoch of 6 steps reads them
// all.
TEST_F(ShardStreamTest, RanksGetShardsBalancedBySampleCount) {
  std::vector<vit::data::ShardInput> large, small;
  for (int64_t i = 0; i < kImages; ++i)
    (i < 40 ? large : small).push_back({files_[i], labels_[i]});
  const auto big = vit::data::write_shards(large, root_ / "mixed", "big", 20);
  const auto little = vit::data::write_shards(small, root_ / "mixed", "little", 4);
  StreamedSplit split = shards_;
  split.shards.clear();
  split.shard_samples.clear();
  const auto bigs = vit::data::shard_files(big, root_ / "mixed", "test");
  const auto littles = vit::data::shard_files(little, root_ / "mixed", "test");
  ASSERT_EQ(bigs.size(), 2u);
  ASSERT_EQ(littles.size(), 2u);
  for (size_t i = 0; i < 2; ++i)
    for (const auto& shard : {bigs[i], littles[i]}) {
      split.shards.push_back(shard);
      split.shard_samples.push_back(vit::data::count_shard_samples(shard, {}));
    }
  EXPECT_EQ(split.shard_samples, (std::vector<int64_t>{20, 4, 20, 4}));
  std::set<int64_t> all;
  for (int64_t rank = 0; rank < 2; ++rank) {
    const StreamLoader loader(split, on_rank(options_, rank, 2), settings_);
    ASSERT_EQ(loader.batches_per_epoch(), 6) << "rank " << rank;
    std::set<int64_t> mine;
    for (int64_t step = 0; step < 6; ++step)
      for (const int64_t i : identities(loader.batch_unnormalized(0, step)))
        EXPECT_TRUE(mine.insert(i).second) << "rank " << rank << " read " << i << " twice";
    EXPECT_EQ(mine.size(), 24u) << "rank " << rank;
    all.insert(mine.begin(), mine.end());
  }
  EXPECT_EQ(all.size(), size_t(kImages));
}

TEST_F(ShardStreamTest, TwoRanksReadDisjointWholeShards) {
  const StreamLoader first(shards_, on_rank(options_, 0, 2), settings_),
      second(shards_, on_rank(options_, 1, 2), settings_);
  // Rank 0 reads shards 0, 2, 4 (28 images), rank 1 shards 1, 3 (20): both
  // train as many steps of 4 as the smaller fills.
  EXPECT_EQ(first.batches_per_epoch(), 5);
  EXPECT_EQ(second.batches_per_epoch(), 5);
  std::set<int64_t> mine[2];
  for (int64_t step = 0; step < 5; ++step) {
    for (const int64_t i : identities(first.batch_unnormalized(0, step))) {
      EXPECT_TRUE(i / 10 == 0 || i / 10 == 2 || i / 10 == 4) << i;
      mine[0].insert(i);
    }
    for (const int64_t i : identities(second.batch_unnormalized(0, step))) {
      EXPECT_TRUE(i / 10 == 1 || i / 10 == 3) << i;
      mine[1].insert(i);
    }
  }
  EXPECT_EQ(mine[0].size() + mine[1].size(), 40u);  // no image twice
}

// Keeping the last batch (data.drop_last false) on shards: alone, batches of
// 10 read all 48 samples, the last batch 8; on two ranks (28 and 20 samples,
// 4 a step) both train 7 steps, as many as the larger share needs, and the
// smaller rank repeats its first 8 samples, so every sample comes.
TEST_F(ShardStreamTest, KeepingTheLastBatchEverySampleComesAndTheRanksKeepInStep) {
  settings_.shuffle_buffer = 16;
  options_.drop_last = false;
  {
    auto o = options_;
    o.batch_size = 10;
    const StreamLoader alone(shards_, o, settings_);
    ASSERT_EQ(alone.batches_per_epoch(), 5);
    EXPECT_EQ(alone.batch_rows(4), 8);
    std::vector<int64_t> seen;
    for (int64_t step = 0; step < 5; ++step) {
      const auto ids = identities(alone.batch_unnormalized(0, step));
      seen.insert(seen.end(), ids.begin(), ids.end());
    }
    std::sort(seen.begin(), seen.end());
    std::vector<int64_t> all(kImages);
    std::iota(all.begin(), all.end(), 0);
    EXPECT_EQ(seen, all);
  }
  std::vector<int64_t> read[2];
  for (int64_t rank = 0; rank < 2; ++rank) {
    const StreamLoader loader(shards_, on_rank(options_, rank, 2), settings_);
    ASSERT_EQ(loader.batches_per_epoch(), 7) << "rank " << rank;
    EXPECT_EQ(loader.size(), 28);
    for (int64_t step = 0; step < 7; ++step) {
      const auto ids = identities(loader.batch_unnormalized(0, step));
      ASSERT_EQ(ids.size(), 4u);
      read[rank].insert(read[rank].end(), ids.begin(), ids.end());
    }
  }
  const std::set<int64_t> first(read[0].begin(), read[0].end());
  const std::set<int64_t> second(read[1].begin(), read[1].end());
  EXPECT_EQ(first.size(), 28u);   // shards 0, 2, 4, each sample once
  EXPECT_EQ(second.size(), 20u);  // shards 1, 3, and 8 of them twice
  std::set<int64_t> all = first;
  all.insert(second.begin(), second.end());
  EXPECT_EQ(all.size(), size_t(kImages));
  // The repeats are the rank's epoch order from its start.
  EXPECT_EQ(std::vector<int64_t>(read[1].begin() + 20, read[1].end()),
            std::vector<int64_t>(read[1].begin(), read[1].begin() + 8));
}

TEST_F(ShardStreamTest, EvaluationReadsEveryShardInOrder) {
  options_.train = false;
  options_.batch_size = 20;
  const StreamLoader loader(shards_, options_, settings_);
  ASSERT_EQ(loader.batches_per_epoch(), 3);
  std::vector<int64_t> seen, expected(kImages);
  for (int64_t step = 0; step < 3; ++step)
    for (const int64_t i : identities(loader.batch_unnormalized(0, step)))
      seen.push_back(i);
  std::iota(expected.begin(), expected.end(), 0);
  EXPECT_EQ(seen, expected);
}

}  // namespace

namespace {

TEST_F(ShardStreamTest, ATruncatedJpegInAShardNamesTheShardAndTheSample) {
  // A shard of one good PNG and one JPEG cut in half.
  std::vector<uint8_t> jpeg;
  const auto photo = torch::randint(0, 256, {40, 50, 3}, torch::kUInt8);
  cv::imencode(".jpg", cv::Mat(40, 50, CV_8UC3, photo.data_ptr<uint8_t>()), jpeg);
  const fs::path cut = root_ / "cut.jpg";
  std::ofstream(cut, std::ios::binary)
      .write(reinterpret_cast<const char*>(jpeg.data()), std::streamsize(jpeg.size() / 2));
  const auto pattern =
      vit::data::write_shards({{files_[0], 0}, {cut, 1}}, root_ / "bad", "bad", 10);
  StreamedSplit bad = shards_;
  bad.shards = {root_ / "bad" / pattern};
  bad.shard_samples = {2};
  options_.train = false;
  options_.batch_size = 2;
  const StreamLoader loader(bad, options_, settings_);
  EXPECT_EQ(vit::testing::error_of([&] { loader.batch(0, 0); }),
            (root_ / "bad" / pattern).string() +
                ":000000001: cannot decode the JPEG (Premature end of JPEG file)");
}

}  // namespace
