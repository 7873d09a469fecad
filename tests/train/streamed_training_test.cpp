// The trainer on streamed data (data/stream_loader): the same run as the
// in-memory path where the two decode the same pixels, and an interrupted
// run resumed mid-epoch ends where an unbroken one does.
#include <csignal>
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>
#include <torch/torch.h>
#include <nlohmann/json.hpp>

#include "error_of.hpp"
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
    // The trainer tests' textures as an image folder: train/ and test/, so
    // data.val_size images of train/ validate.
    write_folder(testing::texture_dataset(256, 1), "train");
    write_folder(testing::texture_dataset(64, 3), "test");
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

// ImageNet's layout, train/ and val/: val/ validates whole, every training
// image trains (nothing held out, whatever data.val_size says), there is no
// test split, and summary.json says so. data.validation holdout restores the
// hold-out, with val/ as the test split; the in-memory path splits alike.
TEST_F(StreamedTrainingTest, ATrainAndValFolderValidatesOnValAndTrainsOnEveryImage) {
  fs::rename(dir_ / "images" / "test", dir_ / "images" / "val");
  Config c = config_;
  c.data.stream = StreamMode::kOn;
  c.train.epochs = 1;
  const auto splits = data::load_data(c);
  EXPECT_EQ(splits.validation, ValidationSource::kFolder);
  EXPECT_EQ(splits.train_size(), 256);
  EXPECT_EQ(splits.val_size(), 64);
  EXPECT_EQ(splits.test_size(), 0);
  const TrainSummary folder = train(c, "folder");
  EXPECT_EQ(folder.steps, 256 / 16);
  EXPECT_FALSE(folder.test);
  const auto summary = nlohmann::json::parse(std::ifstream(run("folder") + "/summary.json"));
  EXPECT_EQ(summary.at("validation"), "folder");
  EXPECT_EQ(summary.at("val_images"), 64);
  EXPECT_EQ(summary.at("test_images"), 0);

  c.data.validation = ValidationSource::kHoldout;
  const auto held = data::load_data(c);
  EXPECT_EQ(held.validation, ValidationSource::kHoldout);
  EXPECT_EQ(held.train_size(), 256 - 64);
  EXPECT_EQ(held.val_size(), 64);
  EXPECT_EQ(held.test_size(), 64);

  c.data.validation = ValidationSource::kAuto;
  c.data.stream = StreamMode::kOff;
  c.data.cache_dir = (dir_ / "cache").string();
  const auto memory = data::load_data(c);
  EXPECT_EQ(memory.validation, ValidationSource::kFolder);
  EXPECT_EQ(memory.train.size(), 256);
  EXPECT_EQ(memory.val.size(), 64);
  EXPECT_EQ(memory.test.size(), 0);
  // val/ holds texture_dataset(64, 3), listed class folder by class folder.
  const auto val = testing::texture_dataset(64, 3);
  EXPECT_TRUE(torch::equal(memory.val.labels.bincount(), val.labels.bincount()));
}

// A root with train/, val/ and test/: auto keeps the hold-out (test/ tests);
// "folder" asked of a root without val/ is a one-line error.
TEST_F(StreamedTrainingTest, FolderValidationNeedsAValFolder) {
  Config c = config_;
  c.data.stream = StreamMode::kOn;
  EXPECT_EQ(data::validation_source(c.data), ValidationSource::kHoldout);
  c.data.validation = ValidationSource::kFolder;
  EXPECT_EQ(testing::error_of([&] { data::load_data(c); }),
            c.data.root + ": no train/ and val/ folders, which data.validation \"folder\" reads");
  write_folder(testing::texture_dataset(8, 5), "val");
  c.data.validation = ValidationSource::kAuto;
  EXPECT_EQ(data::validation_source(c.data), ValidationSource::kHoldout);  // test/ is there too
  c.data.validation = ValidationSource::kFolder;
  const auto splits = data::load_data(c);
  EXPECT_EQ(splits.val_size(), 8);
  EXPECT_EQ(splits.test_size(), 0);
}

}  // namespace
}  // namespace vit
