// The trainer on streamed data (data/stream_loader): the same run as the
// in-memory path where the two decode the same pixels, and an interrupted
// run resumed mid-epoch ends where an unbroken one does.
#include <csignal>
#include <filesystem>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "synthetic.hpp"
#include "vit/data/data_splits.hpp"
#include "vit/io/image_io.hpp"
#include "vit/train/metrics_log.hpp"
#include "vit/train/stop_signal.hpp"
#include "vit/train/trainer.hpp"

namespace vit {
namespace {

namespace fs = std::filesystem;

class StreamedTrainingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    torch::set_num_threads(1);  // bit-identical reductions between runs
    dir_ = fs::temp_directory_path() /
           ("vit_streamed_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    clear_stop_request();
    // The trainer tests' textures as an image folder: train/ and val/ (the test split).
    write_folder(testing::texture_dataset(256, 1), "train");
    write_folder(testing::texture_dataset(64, 3), "val");
    config_ = testing::texture_config();
    config_.data.dataset = DatasetKind::kImageFolder;
    config_.data.root = (dir_ / "images").string();
    config_.data.val_size = 64;
    config_.data.workers = 2;
    config_.data.prefetch_batches = 2;
    config_.train.epochs = 4;
  }
  void TearDown() override {
    clear_stop_request();
    fs::remove_all(dir_);
  }
  void write_folder(const data::Dataset& d, const std::string& split) {
    for (int64_t i = 0; i < d.size(); ++i) {
      const auto& name = d.classes[d.labels[i].item<int64_t>()];
      io::write_png(dir_ / "images" / split / name / (std::to_string(i) + ".png"), d.images[i]);
    }
  }
  std::string run(const std::string& name) const { return (dir_ / name).string(); }
  TrainSummary train(const Config& c, const std::string& name,
                     std::optional<std::string> resume = {}) {
    Trainer trainer(c, data::load_data(c), c10::kCPU, run(name), std::move(resume));
    return trainer.fit();
  }

  fs::path dir_;
  Config config_;
};

TEST_F(StreamedTrainingTest, TheStreamedPathTrainsAsTheInMemoryPathDoes) {
  Config memory = config_, streamed = config_;
  memory.data.stream = StreamMode::kOff;
  memory.data.cache_dir = (dir_ / "cache").string();
  streamed.data.stream = StreamMode::kOn;
  ASSERT_TRUE(data::load_data(streamed).streamed);
  ASSERT_FALSE(data::load_data(memory).streamed);
  const TrainSummary a = train(memory, "memory"), b = train(streamed, "streamed");
  EXPECT_EQ(a.steps, 4 * 12);  // 192 training images after the hold-out, batch 16
  EXPECT_EQ(b.steps, a.steps);
  const auto ra = MetricsLog::read(run("memory") + "/metrics.jsonl");
  const auto rb = MetricsLog::read(run("streamed") + "/metrics.jsonl");
  ASSERT_EQ(ra.size(), rb.size());
  for (size_t i = 0; i < ra.size(); ++i) {
    EXPECT_NEAR(ra[i].train_loss, rb[i].train_loss, 1e-6) << "validation " << i;
    EXPECT_NEAR(ra[i].val_loss, rb[i].val_loss, 1e-6) << "validation " << i;
  }
  ASSERT_TRUE(a.test && b.test);
  EXPECT_EQ(b.test->count, 64);
  EXPECT_NEAR(a.test->loss, b.test->loss, 1e-6);
  EXPECT_GT(b.test->accuracy, 0.9);  // chance is 0.25
}

TEST_F(StreamedTrainingTest, ARandomResizedCropRunResumedMidEpochEndsAsAnUnbrokenOne) {
  Config c = config_;
  RandomResizedCrop crop;
  crop.scale = {0.6, 1.0};
  c.data.augment.random_resized_crop = crop;
  c.data.augment.hflip = true;
  c.data.augment.random_erasing = 0.25;
  c.model.drop_path = 0.1;
  c.validate();
  const TrainSummary straight = train(c, "straight");

  request_stop();  // the first run stops after its first step, mid-epoch
  const TrainSummary interrupted = train(c, "resumed");
  EXPECT_EQ(interrupted.stop_reason, StopReason::kInterrupted);
  EXPECT_EQ(interrupted.steps, 1);
  clear_stop_request();
  const TrainSummary finished = train(c, "resumed", run("resumed") + "/last.pt");
  // It went on from the interrupted run's step: a run that restarted from
  // step 0 would end the same way, the run being deterministic.
  EXPECT_EQ(straight.resumed_at_step, 0);
  EXPECT_EQ(finished.resumed_at_step, 1);
  EXPECT_EQ(finished.steps, straight.steps);
  ASSERT_TRUE(finished.test && straight.test);
  EXPECT_NEAR(finished.test->loss, straight.test->loss, 1e-6);
  const auto a = MetricsLog::read(run("straight") + "/metrics.jsonl");
  const auto b = MetricsLog::read(run("resumed") + "/metrics.jsonl");
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i)
    EXPECT_NEAR(a[i].val_loss, b[i].val_loss, 1e-6) << "validation " << i;
  // Crops of an 8 x 8 texture resized back to 8 x 8 blur its stripes: it
  // learns, more slowly than on the whole images (chance is 0.25).
  EXPECT_GT(straight.test->accuracy, 0.4);
}

}  // namespace
}  // namespace vit
