#include "vit/train/trainer.hpp"

#include <csignal>
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>
#include <torch/torch.h>
#include <nlohmann/json.hpp>

#include "error_of.hpp"
#include "synthetic.hpp"
#include "training_runs.hpp"
#include "vit/error.hpp"
#include "vit/train/metrics_log.hpp"
#include "vit/train/optimizer.hpp"
#include "vit/train/stop_signal.hpp"
#include "vit/train/training_checkpoint.hpp"

namespace vit {
namespace {

namespace fs = std::filesystem;

using TrainerTest = testing::TrainingRunsTest;

TEST_F(TrainerTest, LossFallsAndAccuracyRisesAboveChance) {
  Trainer trainer(testing::texture_config(), testing::texture_splits(), c10::kCPU, run("a"));
  const TrainSummary s = trainer.fit();
  EXPECT_EQ(s.stop_reason, StopReason::kEpochsDone);
  EXPECT_EQ(s.steps, 6 * 12);  // 192 images / batch 16 = 12 steps per epoch
  const auto records = MetricsLog::read(run("a") + "/metrics.jsonl");
  ASSERT_EQ(records.size(), 6u);  // one validation per epoch
  EXPECT_LT(records.back().train_loss, records.front().train_loss);
  EXPECT_GT(records.back().val_acc, 0.9);  // chance is 0.25
  ASSERT_TRUE(s.test.has_value());
  EXPECT_GT(s.test->accuracy, 0.9);
  EXPECT_EQ(s.test->count, 64);
  for (const char* file : {"best.pt", "last.pt", "metrics.jsonl", "metrics.csv", "summary.json"})
    EXPECT_TRUE(fs::exists(run("a") + "/" + file)) << file;
  std::ifstream csv(run("a") + "/metrics.csv");
  std::string header;
  std::getline(csv, header);
  EXPECT_EQ(header,
            "step,epoch,train_loss,train_acc,val_loss,val_acc,best_val_acc,lr,images_per_sec,"
            "elapsed_s,val_top5,ema_val_loss,ema_val_acc,peak_memory_mib");
}

// The other optimizer and the CPU's mixed precision learn the same task.
TEST_F(TrainerTest, SgdWithBf16AutocastAlsoLearns) {
  Config c = testing::texture_config();
  c.train.optimizer = OptimizerRule::kSgd;
  c.train.lr = 0.1;
  c.train.precision = Precision::kBf16;
  Trainer trainer(c, testing::texture_splits(), c10::kCPU, run("sgd"));
  const TrainSummary s = trainer.fit();
  const auto records = MetricsLog::read(run("sgd") + "/metrics.jsonl");
  ASSERT_EQ(records.size(), 6u);
  EXPECT_LT(records.back().train_loss, records.front().train_loss);
  ASSERT_TRUE(s.test.has_value());
  EXPECT_GT(s.test->accuracy, 0.9);  // chance is 0.25
}

TEST_F(TrainerTest, ValidatesEveryNStepsAndAtTheEnd) {
  Config c = testing::texture_config();
  c.train.epochs = 1;
  c.train.validate_every = 5;
  Trainer trainer(c, testing::texture_splits(), c10::kCPU, run("b"));
  trainer.fit();
  std::vector<int64_t> steps;
  for (const auto& r : MetricsLog::read(run("b") + "/metrics.jsonl"))
    steps.push_back(r.step);
  EXPECT_EQ(steps, (std::vector<int64_t>{5, 10, 12}));
}

TEST_F(TrainerTest, InterruptedRunResumesToTheSameResult) {
  const Config c = testing::texture_config();
  Trainer straight(c, testing::texture_splits(), c10::kCPU, run("straight"));
  const TrainSummary expected = straight.fit();

  // Stop after the first step (mid-epoch), then resume to the end.
  Trainer first(c, testing::texture_splits(), c10::kCPU, run("resumed"));
  request_stop();
  const TrainSummary interrupted = first.fit();
  EXPECT_EQ(interrupted.stop_reason, StopReason::kInterrupted);
  EXPECT_EQ(interrupted.steps, 1);
  EXPECT_FALSE(interrupted.test.has_value());
  clear_stop_request();

  Trainer second(c, testing::texture_splits(), c10::kCPU, run("resumed"),
                 run("resumed") + "/last.pt");
  const TrainSummary finished = second.fit();
  EXPECT_EQ(finished.stop_reason, StopReason::kEpochsDone);
  EXPECT_EQ(finished.steps, expected.steps);
  EXPECT_DOUBLE_EQ(finished.best_val_acc, expected.best_val_acc);
  ASSERT_TRUE(finished.test && expected.test);
  EXPECT_NEAR(finished.test->loss, expected.test->loss, 1e-6);

  const auto a = MetricsLog::read(run("straight") + "/metrics.jsonl");
  const auto b = MetricsLog::read(run("resumed") + "/metrics.jsonl");
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].step, b[i].step);
    EXPECT_NEAR(a[i].val_loss, b[i].val_loss, 1e-6) << "validation " << i;
    // The steps before the interrupt count in the first record after it.
    EXPECT_NEAR(a[i].train_loss, b[i].train_loss, 1e-6) << "validation " << i;
    EXPECT_DOUBLE_EQ(a[i].train_acc, b[i].train_acc) << "validation " << i;
  }
}

// A checkpoint written before checkpoints carried the run time (elapsed 0):
// the resumed run continues the count that metrics.jsonl recorded up to the
// checkpoint's step, instead of starting again from zero.
TEST_F(TrainerTest, ResumingAnOldCheckpointContinuesTheRecordedRunTime) {
  Config c = testing::texture_config();
  c.train.epochs = 1;
  c.train.validate_every = 1;
  {
    Trainer first(c, testing::texture_splits(), c10::kCPU, run("old"));
    request_stop();  // stops after step 1 and its validation
    ASSERT_EQ(first.fit().stop_reason, StopReason::kInterrupted);
    clear_stop_request();
  }
  const auto last = run("old") + "/last.pt";
  {
    VisionTransformer model(c.model);
    auto optimizer = make_optimizer(model, c.train);
    CheckpointMeta meta = restore_training_checkpoint(last, model, *optimizer);
    ASSERT_EQ(meta.step, 1);
    ASSERT_GT(meta.elapsed_s, 0.0);
    meta.elapsed_s = 0;
    save_training_checkpoint(last, model, *optimizer, meta);
  }
  auto records = MetricsLog::read(run("old") + "/metrics.jsonl");
  ASSERT_EQ(records.size(), 1u);
  records[0].elapsed_s = 1000.0;  // as if the first run had taken that long before its resume
  {
    MetricsLog rewritten(run("old"), /*keep_up_to_step=*/-1);
    rewritten.append(records[0]);
  }

  Trainer resumed(c, testing::texture_splits(), c10::kCPU, run("old"), last);
  resumed.fit();
  records = MetricsLog::read(run("old") + "/metrics.jsonl");
  ASSERT_EQ(records.size(), 12u);  // one validation per step of the epoch
  EXPECT_EQ(records[0].elapsed_s, 1000.0);
  EXPECT_GT(records[1].elapsed_s, 1000.0);
  EXPECT_LT(records[1].elapsed_s, 1000.0 + 60.0);
}

TEST_F(TrainerTest, ResumingAFinishedRunTrainsNoFurther) {
  Trainer trainer(testing::texture_config(), testing::texture_splits(), c10::kCPU, run("c"));
  const TrainSummary done = trainer.fit();
  Trainer again(testing::texture_config(), testing::texture_splits(), c10::kCPU, run("c"),
                run("c") + "/last.pt");
  const TrainSummary s = again.fit();
  EXPECT_EQ(s.stop_text(), "already finished (epochs done)");
  EXPECT_EQ(s.steps, done.steps);
  EXPECT_EQ(MetricsLog::read(run("c") + "/metrics.jsonl").size(), 6u);
}

TEST_F(TrainerTest, EarlyStoppingEndsTheRunAndKeepsTheBest) {
  Config c = testing::texture_config();
  c.train.lr = 1e-9;  // nothing improves after the first validation
  c.train.min_lr = 0;
  c.train.epochs = 20;
  c.train.early_stop_patience = 2;
  c.train.early_stop_min_delta = 0.5;
  Trainer trainer(c, testing::texture_splits(), c10::kCPU, run("d"));
  const TrainSummary s = trainer.fit();
  EXPECT_EQ(s.stop_reason, StopReason::kPatienceExhausted);
  EXPECT_EQ(s.steps, 3 * 12);  // validations 1 (best), 2 and 3 (no improvement) -> stop
  EXPECT_EQ(s.best_step, 12);
  EXPECT_EQ(read_checkpoint_meta(run("d") + "/best.pt").step, 12);
  const auto last = read_checkpoint_meta(run("d") + "/last.pt");
  EXPECT_EQ(last.step, 36);
  EXPECT_TRUE(last.finished);
  EXPECT_EQ(last.stop_reason, "patience exhausted");
}

TEST(StopSignal, SigintAndSigtermAskForAStop) {
  install_stop_signal_handlers();
  for (const int signal_number : {SIGINT, SIGTERM}) {
    clear_stop_request();
    std::raise(signal_number);  // the handler only sets the flag; the process goes on
    EXPECT_TRUE(stop_requested()) << signal_number;
  }
  clear_stop_request();
  std::signal(SIGINT, SIG_DFL);
  std::signal(SIGTERM, SIG_DFL);
}

TEST_F(TrainerTest, NonFiniteLossStopsWithTheStep) {
  Trainer trainer(testing::texture_config(), testing::texture_splits(), c10::kCPU, run("e"));
  {
    torch::NoGradGuard no_grad;
    trainer.model()->head->bias.fill_(std::numeric_limits<float>::quiet_NaN());
  }
  EXPECT_EQ(
      testing::error_of([&] { trainer.fit(); }),
      "training loss is nan at step 1 (epoch 1); stopping. No checkpoint was written before it");
}

// A final LayerNorm scale of 1e21 keeps the logits (~1e20) and so the loss
// finite, but the head's gradient (~1e21 per entry) overflows the fp32 sum of
// squares behind the global norm: the clip sees an infinite norm, and the
// optimizer must not take the step.
TEST_F(TrainerTest, InfiniteGradientNormStopsBeforeTheOptimizerStep) {
  Trainer trainer(testing::texture_config(), testing::texture_splits(), c10::kCPU, run("g"));
  testing::expect_an_infinite_norm_stops_at_step_1(trainer);
  EXPECT_FALSE(fs::exists(run("g") + "/last.pt"));
}

// A step with an absurd learning rate leaves finite gradients but broken
// weights: the training loss of that step was finite, so the validation right
// after it is what must stop the run, before the weights reach a checkpoint.
Config exploding_config() {
  Config c = testing::texture_config();
  c.train.lr = 1e30;
  c.train.warmup_epochs = 0;
  c.train.validate_every = 1;
  return c;
}

TEST_F(TrainerTest, NonFiniteValidationLossStopsBeforeAnyCheckpoint) {
  Trainer trainer(exploding_config(), testing::texture_splits(), c10::kCPU, run("v"));
  EXPECT_EQ(testing::error_of([&] { trainer.fit(); }),
            "validation loss is nan at step 1 (epoch 1); stopping. No checkpoint was written "
            "before it");
  EXPECT_FALSE(fs::exists(run("v") + "/best.pt"));
  EXPECT_FALSE(fs::exists(run("v") + "/last.pt"));
}

TEST_F(TrainerTest, NonFiniteValidationLossKeepsTheLastGoodCheckpoint) {
  {
    Trainer first(testing::texture_config(), testing::texture_splits(), c10::kCPU, run("k"));
    request_stop();  // stops after step 1 with a good last.pt
    ASSERT_EQ(first.fit().stop_reason, StopReason::kInterrupted);
    clear_stop_request();
  }
  const auto last = run("k") + "/last.pt";
  const auto before = fs::last_write_time(last);
  Trainer resumed(exploding_config(), testing::texture_splits(), c10::kCPU, run("k"), last);
  EXPECT_EQ(
      testing::error_of([&] { resumed.fit(); }),
      "validation loss is nan at step 2 (epoch 1); stopping. The last good checkpoint is " + last);
  EXPECT_EQ(fs::last_write_time(last), before);
  const auto records = MetricsLog::read(run("k") + "/metrics.jsonl");
  EXPECT_TRUE(records.empty());  // the broken validation was not recorded either
}

TEST_F(TrainerTest, RejectsADatasetThatDoesNotFitTheModel) {
  Config c = testing::texture_config();
  c.model.num_classes = 10;
  EXPECT_EQ(testing::error_of([&] { Trainer(c, testing::texture_splits(), c10::kCPU, run("f")); }),
            "the dataset has 4 classes but model.num_classes is 10");
  c = testing::texture_config();
  c.train.batch_size = 1000;
  EXPECT_EQ(testing::error_of([&] { Trainer(c, testing::texture_splits(), c10::kCPU, run("f")); }),
            "the training split has 192 images, fewer than one batch of train.batch_size 1000");
}

}  // namespace
}  // namespace vit
