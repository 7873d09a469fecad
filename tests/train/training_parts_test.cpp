// The trainer's small parts: schedule, early stopping, atomic writes,
// checkpoints, metrics log and the runs/latest link.
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "error_of.hpp"
#include "synthetic.hpp"
#include "vit/atomic_write.hpp"
#include "vit/error.hpp"
#include "vit/infer/evaluate.hpp"
#include "vit/train/early_stopping.hpp"
#include "vit/train/lr_schedule.hpp"
#include "vit/train/metrics_log.hpp"
#include "vit/train/optimizer.hpp"
#include "vit/train/run_dir.hpp"
#include "vit/train/running_totals.hpp"
#include "vit/train/training_checkpoint.hpp"
#include "vit/weights/checkpoint.hpp"

namespace vit {
namespace {

namespace fs = std::filesystem;

fs::path fresh_dir(const std::string& name) {
  auto dir = fs::temp_directory_path() / ("vit_parts_" + std::to_string(::getpid()) + "_" + name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

TEST(LearningRate, WarmsUpLinearlyThenFollowsTheCosine) {
  TrainConfig t;
  t.lr = 1e-3;
  t.min_lr = 1e-5;
  t.epochs = 10;
  t.warmup_epochs = 2;
  // 10 steps per epoch: warmup is steps 0..19, the cosine covers steps 20..100.
  EXPECT_DOUBLE_EQ(learning_rate(t, 0, 10), 1e-3 / 20);
  EXPECT_DOUBLE_EQ(learning_rate(t, 19, 10), 1e-3);
  EXPECT_DOUBLE_EQ(learning_rate(t, 20, 10), 1e-3);
  EXPECT_NEAR(learning_rate(t, 60, 10), (1e-3 + 1e-5) / 2, 1e-15);
  EXPECT_NEAR(learning_rate(t, 100, 10), 1e-5, 1e-15);
  t.warmup_epochs = 0;
  EXPECT_DOUBLE_EQ(learning_rate(t, 0, 10), 1e-3);
}

TEST(EarlyStopping, StopsAfterPatienceValidationsWithoutImprovement) {
  EarlyStopping stopping(/*patience=*/3, /*min_delta=*/0.0);
  const std::vector<double> accuracies = {0.50, 0.60, 0.60, 0.59, 0.61, 0.61, 0.60, 0.61, 0.70};
  std::vector<bool> improved;
  int stopped_at = -1;
  for (size_t i = 0; i < accuracies.size(); ++i) {
    improved.push_back(stopping.update(accuracies[i], static_cast<int64_t>(i + 1)));
    if (stopping.should_stop()) {
      stopped_at = static_cast<int>(i + 1);
      break;
    }
  }
  EXPECT_EQ(improved, (std::vector<bool>{true, true, false, false, true, false, false, false}));
  EXPECT_EQ(stopped_at, 8);  // validations 6, 7, 8 did not beat 0.61
  EXPECT_DOUBLE_EQ(stopping.best(), 0.61);
  EXPECT_EQ(stopping.best_step(), 5);
}

TEST(EarlyStopping, MinDeltaAndZeroPatience) {
  EarlyStopping strict(/*patience=*/1, /*min_delta=*/0.05);
  EXPECT_TRUE(strict.update(0.5, 1));
  EXPECT_FALSE(strict.update(0.55, 2));  // not better by more than 0.05
  EXPECT_TRUE(strict.should_stop());
  EarlyStopping never(/*patience=*/0, /*min_delta=*/0.0);
  for (int i = 0; i < 100; ++i)
    never.update(0.1, i);
  EXPECT_FALSE(never.should_stop());
}

TEST(AtomicWrite, AFailedWriteLeavesNoPartialFile) {
  const auto dir = fresh_dir("atomic");
  const std::string target = (dir / "last.pt").string();
  write_text_atomically(target, "good");
  EXPECT_EQ(testing::error_of([&] {
              write_atomically(target, [](const std::string& temp) {
                std::ofstream(temp) << "half a checkp";
                throw std::runtime_error("disk full");
              });
            }),
            target + ": write failed (disk full)");
  std::ifstream in(target);
  std::string content;
  std::getline(in, content);
  EXPECT_EQ(content, "good");
  EXPECT_EQ(std::distance(fs::directory_iterator(dir), fs::directory_iterator()),
            1);  // no temp file left
  fs::remove_all(dir);
}

TEST(AtomicWrite, AnUnwritableFolderIsAClearError) {
  EXPECT_EQ(
      testing::error_of([] { write_text_atomically("/proc/vit-cannot-write-here/x.json", "{}"); }),
      "/proc/vit-cannot-write-here/x.json: cannot create folder /proc/vit-cannot-write-here (No "
      "such file or directory)");
}

TEST(AtomicWrite, AFullDiskIsAnErrorNamingTheFile) {
  // /dev/full fails every write with ENOSPC, like a full disk.
  if (!fs::exists("/dev/full")) GTEST_SKIP() << "no /dev/full on this machine";
  const std::string bytes(1 << 20, 'x');
  EXPECT_EQ(testing::error_of([&] { write_bytes("/dev/full", bytes.data(), bytes.size()); }),
            "cannot write /dev/full (No space left on device)");
}

TEST(Checkpoint, ModelOptimizerAndStepRoundTrip) {
  const auto dir = fresh_dir("ckpt");
  const Config c = testing::texture_config();
  torch::manual_seed(0);
  VisionTransformer model(c.model);
  auto optimizer = make_optimizer(model, c.train);
  // One real step so the optimizer has state (AdamW's moments).
  auto loss = model->forward(torch::randn({4, 1, 8, 8})).sum();
  loss.backward();
  optimizer->step(1e-3);
  CheckpointMeta meta;
  meta.config = c;
  meta.class_names = {"a", "b", "c", "d"};
  meta.step = 123;
  meta.epoch = 4;
  meta.best_metric = 0.75;
  meta.best_step = 100;
  const RunningTotals totals{/*loss_sum=*/12.5, /*correct=*/300, /*seen=*/512, /*steps=*/8,
                             /*train_seconds=*/1.25};
  store_running_totals(meta, totals);
  const std::string path = (dir / "last.pt").string();
  save_training_checkpoint(path, model, *optimizer, meta);

  torch::manual_seed(99);
  VisionTransformer other(c.model);
  auto other_optimizer = make_optimizer(other, c.train);
  const CheckpointMeta back = restore_training_checkpoint(path, other, *other_optimizer);
  EXPECT_EQ(back.step, 123);
  EXPECT_EQ(back.epoch, 4);
  EXPECT_DOUBLE_EQ(back.best_metric, 0.75);
  EXPECT_EQ(back.class_names, meta.class_names);
  EXPECT_EQ(config_to_json_string(back.config), config_to_json_string(c));
  // The trainer's statistics since the last validation ride in the meta record.
  const RunningTotals totals_back = stored_running_totals(back, path);
  EXPECT_DOUBLE_EQ(totals_back.loss_sum, 12.5);
  EXPECT_EQ(totals_back.correct, 300);
  EXPECT_EQ(totals_back.seen, 512);
  EXPECT_EQ(totals_back.steps, 8);
  EXPECT_DOUBLE_EQ(totals_back.train_seconds, 1.25);
  const auto a = model->named_parameters(), b = other->named_parameters();
  for (const auto& p : a)
    EXPECT_TRUE(torch::equal(p.value(), b[p.key()])) << p.key();
  {
    LoadedModel loaded = load_model(path);  // the inference reader sees the same weights
    const auto x = torch::randn({2, 1, 8, 8});
    model->eval();
    torch::NoGradGuard no_grad;
    EXPECT_TRUE(torch::equal(loaded.model->forward(x), model->forward(x)));
  }
  // The optimizer state came back: one more identical step keeps the twins equal.
  EXPECT_EQ(other_optimizer->steps(), 1);
  for (auto* o : {optimizer.get(), other_optimizer.get()})
    o->zero_grad();
  model->forward(torch::ones({4, 1, 8, 8})).sum().backward();
  other->forward(torch::ones({4, 1, 8, 8})).sum().backward();
  optimizer->step(1e-3);
  other_optimizer->step(1e-3);
  for (const auto& p : a)
    EXPECT_TRUE(torch::equal(p.value(), b[p.key()])) << p.key();
  fs::remove_all(dir);
}

TEST(Checkpoint, ADifferentArchitectureIsRefused) {
  const auto dir = fresh_dir("arch");
  const Config c = testing::texture_config();
  testing::save_texture_checkpoint((dir / "x.pt").string());
  ModelConfig deeper = c.model;
  deeper.depth = 2;
  VisionTransformer other(deeper);
  auto other_optimizer = make_optimizer(other, c.train);
  EXPECT_EQ(testing::error_of([&] {
              restore_training_checkpoint((dir / "x.pt").string(), other, *other_optimizer);
            }),
            (dir / "x.pt").string() +
                ": the checkpoint's architecture differs from the model's (depth 2 vs 1)");
  fs::remove_all(dir);
}

TEST(Checkpoint, DamagedOrForeignFilesAreRefused) {
  const auto dir = fresh_dir("damaged");
  const std::string garbage = (dir / "garbage.pt").string();
  std::ofstream(garbage) << "this is not a checkpoint";
  EXPECT_THROW(load_model(garbage), Error);
  EXPECT_EQ(testing::error_of([&] { load_model((dir / "missing.pt").string()); }),
            (dir / "missing.pt").string() + ": checkpoint not found");
  EXPECT_EQ(testing::error_of([&] { meta_from_json(R"({"format_version": 99})", "x.pt"); }),
            "x.pt: checkpoint format version 99, this vit reads version 1");
  fs::remove_all(dir);
}

// A checkpoint saved at a validation has no statistics since: they start at zero.
// A damaged record is a one-line error naming the file.
TEST(Checkpoint, RunningTotalsAreZeroWhenAbsentAndRefusedWhenDamaged) {
  CheckpointMeta meta;
  EXPECT_EQ(stored_running_totals(meta, "x.pt").seen, 0);
  meta.trainer["since_validation"] = {{"loss_sum", 1.0}, {"correct", "many"}};
  const std::string error = testing::error_of([&] { stored_running_totals(meta, "x.pt"); });
  EXPECT_EQ(error.rfind("x.pt: damaged checkpoint metadata (", 0), 0u) << error;
}

TEST(MetricsLog, ResumeDropsRecordsAfterTheCheckpoint) {
  const auto dir = fresh_dir("metrics");
  {
    MetricsLog log(dir.string(), -1);
    for (int64_t step : {10, 20, 30}) {
      ValidationRecord r;
      r.step = step;
      r.val_acc = step / 100.0;
      log.append(r);
    }
  }
  MetricsLog resumed(dir.string(), 20);
  const auto records = MetricsLog::read((dir / "metrics.jsonl").string());
  ASSERT_EQ(records.size(), 2u);
  EXPECT_EQ(records[1].step, 20);
  EXPECT_DOUBLE_EQ(records[1].val_acc, 0.2);
  fs::remove_all(dir);
}

// Top-5 accuracy with more than five classes: an image counts when fewer
// than five logits are above its label's, counted here without topk.
TEST(Evaluate, TopFiveCountsTheLabelsAmongTheFiveHighestLogits) {
  Config c = testing::texture_config();  // labels 0..3 of 8 outputs
  c.model.num_classes = 8;
  torch::manual_seed(2);
  VisionTransformer model(c.model);
  const data::DataSplits splits = testing::texture_splits();
  const data::BatchLoader loader(splits.val, data::loader_options(c, c10::kCPU, /*train=*/false));
  const EvalResult r = evaluate(model, loader, c.model.num_classes, Precision::kFp32);
  int64_t expected = 0;
  torch::NoGradGuard no_grad;
  for (int64_t step = 0; step < loader.batches_per_epoch(); ++step) {
    const auto batch = loader.batch(0, step);
    const auto logits = model->forward(batch.images);              // (B, 8)
    const auto own = logits.gather(1, batch.labels.unsqueeze(1));  // (B, 1)
    expected += logits.gt(own).sum(/*dim=*/1).lt(5).sum().item<int64_t>();
  }
  ASSERT_TRUE(r.has_top5());
  EXPECT_EQ(r.top5_correct, expected);
  EXPECT_LT(expected, r.count);  // an untrained model misses some: the count is not trivial
  EXPECT_GE(r.top5_accuracy(), r.accuracy);
  c.model.num_classes = 5;  // five classes: every label is in the top five, so none is given
  VisionTransformer five(c.model);
  EXPECT_FALSE(evaluate(five, loader, 5, Precision::kFp32).has_top5());
}

TEST(MetricsLog, TheOptionalFieldsRoundTripAndLeaveEmptyCells) {
  const auto dir = fresh_dir("metrics_optional");
  {
    MetricsLog log(dir.string(), -1);
    ValidationRecord with, without;
    with.step = 1;
    with.val_top5 = 0.75;
    with.ema_val_acc = 0.5;
    with.ema_val_loss = 1.25;
    with.peak_memory_mib = 300;
    without.step = 2;
    log.append(with);
    log.append(without);
  }
  const auto records = MetricsLog::read((dir / "metrics.jsonl").string());
  ASSERT_EQ(records.size(), 2u);
  EXPECT_EQ(records[0].val_top5, 0.75);
  EXPECT_EQ(records[0].ema_val_acc, 0.5);
  EXPECT_EQ(records[0].ema_val_loss, 1.25);
  EXPECT_EQ(records[0].peak_memory_mib, 300);
  EXPECT_FALSE(records[1].val_top5 || records[1].ema_val_acc || records[1].peak_memory_mib);
  std::ifstream csv(dir / "metrics.csv");
  std::string header, first, second;
  std::getline(csv, header);
  std::getline(csv, first);
  std::getline(csv, second);
  const std::string filled = ",0.75,1.25,0.5,300", empty = ",,,,";  // top-5, ema loss, acc, peak
  ASSERT_GT(first.size(), filled.size());
  EXPECT_EQ(first.substr(first.size() - filled.size()), filled);
  EXPECT_EQ(second.substr(second.size() - empty.size()), empty);
  fs::remove_all(dir);
}

TEST(Evaluate, LabelsBeyondTheModelsClassesAreAClearError) {
  const Config c = testing::texture_config();  // labels 0..3
  VisionTransformer model(c.model);
  const data::DataSplits splits = testing::texture_splits();
  const data::BatchLoader loader(splits.val, data::loader_options(c, c10::kCPU, /*train=*/false));
  EXPECT_EQ(
      testing::error_of([&] { evaluate(model, loader, /*num_classes=*/2, Precision::kFp32); }),
      "the data has labels up to 3 but the model has 2 classes (model.num_classes)");
}

TEST(RunDir, LatestResolvesToTheNewestRun) {
  const auto root = fresh_dir("runs");
  const std::string first = new_run_dir("demo", "", root.string());
  EXPECT_EQ(fs::path(first).parent_path(), root);
  EXPECT_EQ(fs::path(first).filename().string().rfind("demo-", 0), 0u);
  fs::create_directories(first);
  std::ofstream(first + "/best.pt") << "x";
  point_latest_at(first, root.string());
  EXPECT_EQ(fs::read_symlink(root / "latest"), fs::path(first).filename());
  EXPECT_EQ(resolve_checkpoint_path(std::nullopt, root.string()),
            (root / "latest" / "best.pt").string());
  EXPECT_TRUE(fs::exists(resolve_checkpoint_path(std::nullopt, root.string())));
  const std::string second = (root / "other").string();
  fs::create_directories(second);
  point_latest_at(second, root.string());  // replaces the old link
  EXPECT_EQ(fs::read_symlink(root / "latest"), fs::path("other"));
  fs::remove_all(root);
  EXPECT_THROW(resolve_checkpoint_path(std::nullopt, root.string()), Error);
}

}  // namespace
}  // namespace vit
