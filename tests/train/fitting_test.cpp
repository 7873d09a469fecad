// What does not fit: the weights' average (train.ema) against timm's
// ModelEmaV3, and a run with the average, micro-batches and checkpointed
// blocks that resumes to the same average and logs its memory.
#include <cmath>
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>
#include <torch/torch.h>
#include <nlohmann/json.hpp>

#include "error_of.hpp"
#include "synthetic.hpp"
#include "training_runs.hpp"
#include "vit/train/metrics_log.hpp"
#include "vit/train/model_ema.hpp"
#include "vit/train/stop_signal.hpp"
#include "vit/weights/checkpoint.hpp"

namespace vit {
namespace {

namespace fs = std::filesystem;

// timm 1.0's ModelEmaV3(model, decay=0.9998, use_warmup=...).get_decay(step),
// printed by timm itself.
TEST(ModelEma, DecayIsTimmsModelEmaV3s) {
  ModelEmaConfig warm{0.9998, /*warmup=*/true, true};
  EXPECT_EQ(ema_decay(warm, 1), 0.0);
  EXPECT_DOUBLE_EQ(ema_decay(warm, 2), 0.3700394750525634);
  EXPECT_DOUBLE_EQ(ema_decay(warm, 3), 0.5192501432308638);
  EXPECT_DOUBLE_EQ(ema_decay(warm, 10), 0.7845565309968117);
  EXPECT_DOUBLE_EQ(ema_decay(warm, 1000), 0.99);
  EXPECT_DOUBLE_EQ(ema_decay(warm, 100000), 0.9995358411166387);
  EXPECT_DOUBLE_EQ(ema_decay(warm, 10000000), 0.9998);
  ModelEmaConfig plain{0.9998, /*warmup=*/false, true};
  EXPECT_EQ(ema_decay(plain, 1), 0.0);
  EXPECT_EQ(ema_decay(plain, 2), 0.9998);
  EXPECT_EQ(ema_decay(plain, 3), 0.9998);
}

// Along a trajectory of weights, the fp32 average follows timm's update
// (lerp toward the weights by 1 - decay_t) computed in float64: each fp32
// lerp rounds by about 6e-8 relative, and the errors decay with the
// average, so 1e-6 relative holds with room.
TEST(ModelEma, FollowsTheUpdateInFloat64AlongATrajectory) {
  for (const bool warmup : {true, false}) {
    const Config c = testing::texture_config();
    torch::manual_seed(4);
    VisionTransformer model(c.model);
    auto optimizer = make_optimizer(model, c.train);
    const ModelEmaConfig config{0.95, warmup, true};
    ModelEma ema(model, *optimizer, config);
    at::Tensor expected;  // float64
    for (int64_t step = 1; step <= 60; ++step) {
      {
        torch::NoGradGuard no_grad;
        const_cast<at::Tensor&>(optimizer->values()).add_(torch::randn_like(optimizer->values()));
      }
      ema.update(step);
      const auto weights = optimizer->values().to(torch::kDouble);
      const double decay = ema_decay(config, step);
      expected = step == 1 ? weights.clone() : decay * expected + (1 - decay) * weights;
    }
    const double scale = expected.abs().max().item<double>();
    const auto live = model->named_parameters();
    for (const auto& p : ema.model()->named_parameters()) {
      const int64_t offset = optimizer->offset_of(live[p.key()]);
      ASSERT_GE(offset, 0) << p.key();  // every parameter is trained
      const auto want = expected.narrow(0, offset, p.value().numel());
      const auto got = p.value().detach().flatten().to(torch::kDouble);
      EXPECT_LE((got - want).abs().max().item<double>(), 1e-6 * scale)
          << p.key() << ", warmup " << warmup;
    }
  }
}

using FittingTest = testing::TrainingRunsTest;

// Micro-batches of 8 (2 per step of 16), every block checkpointed, and the
// average with warmup: 12 optimizer steps an epoch as without them.
Config fitting_config() {
  Config c = testing::texture_config();
  c.model.depth = 2;
  c.model.drop_path = 0.1;  // the recompute must draw the same masks
  c.train.epochs = 2;
  c.train.accum_steps = 2;
  c.train.grad_checkpointing.every = 1;
  c.train.ema = ModelEmaConfig{0.9, /*warmup=*/true, /*select_best=*/true};
  c.validate();
  return c;
}

void expect_same_parameters(const VisionTransformer& a, const VisionTransformer& b) {
  const auto pa = a->named_parameters(), pb = b->named_parameters();
  for (const auto& p : pa)
    EXPECT_TRUE(torch::equal(p.value(), pb[p.key()])) << p.key();
}

// A run interrupted after its first step and resumed ends with the same
// weights and the same average, to the bit, as one that ran straight; every
// record holds both accuracies and the steps' peak memory.
TEST_F(FittingTest, AResumedRunReachesTheSameAverage) {
  const Config c = fitting_config();
  Trainer straight(c, testing::texture_splits(), c10::kCPU, run("straight"));
  const TrainSummary expected = straight.fit();
  EXPECT_EQ(expected.steps, 2 * 12);  // 192 images / 16 a step, as without micro-batches

  Trainer first(c, testing::texture_splits(), c10::kCPU, run("resumed"));
  request_stop();
  EXPECT_EQ(first.fit().steps, 1);
  clear_stop_request();
  Trainer second(c, testing::texture_splits(), c10::kCPU, run("resumed"),
                 run("resumed") + "/last.pt");
  EXPECT_EQ(second.fit().steps, expected.steps);

  expect_same_parameters(load_model(run("resumed") + "/last.pt").model,
                         load_model(run("straight") + "/last.pt").model);
  const auto average = load_model_average(run("straight") + "/last.pt");
  expect_same_parameters(load_model_average(run("resumed") + "/last.pt").model, average.model);
  // The average is not the weights.
  EXPECT_FALSE(torch::equal(average.model->head->weight,
                            load_model(run("straight") + "/last.pt").model->head->weight));

  const auto records = MetricsLog::read(run("straight") + "/metrics.jsonl");
  ASSERT_EQ(records.size(), 2u);
  for (const auto& r : records) {
    ASSERT_TRUE(r.ema_val_acc && r.ema_val_loss && r.peak_memory_mib);
    EXPECT_GE(*r.ema_val_acc, 0.0);
    EXPECT_LE(*r.ema_val_acc, 1.0);
    EXPECT_GT(*r.peak_memory_mib, 1.0);  // the process's resident set: LibTorch alone is more
    EXPECT_FALSE(r.val_top5);            // four classes: no top-5
    EXPECT_DOUBLE_EQ(r.best_val_acc, std::max(r.best_val_acc, std::max(r.val_acc, *r.ema_val_acc)));
  }
  std::ifstream file(run("straight") + "/summary.json");
  const auto summary = nlohmann::json::parse(file);
  EXPECT_TRUE(summary.at("best_weights") == "ema" || summary.at("best_weights") == "weights");
  EXPECT_GT(summary.at("peak_memory_mib").get<double>(), 1.0);
}

// 192 training images in micro-batches of 10, 2 a step: leaving the last
// partial batch out (data.drop_last, the default) an epoch is 19 whole
// micro-batches, 9 steps; keeping it, 20 micro-batches (the last of 2
// images), 10 steps, the last of 12 images, and every image trains.
TEST_F(FittingTest, KeepingTheLastBatchAnEpochTrainsEveryImage) {
  for (const bool drop_last : {true, false}) {
    Config c = testing::texture_config();
    c.train.epochs = 1;
    c.train.batch_size = 20;
    c.train.accum_steps = 2;
    c.data.drop_last = drop_last;
    c.validate();
    const std::string dir = run(drop_last ? "drop" : "keep");
    Trainer trainer(c, testing::texture_splits(), c10::kCPU, dir);
    EXPECT_EQ(trainer.fit().steps, drop_last ? 9 : 10);
    const auto records = MetricsLog::read(dir + "/metrics.jsonl");
    ASSERT_FALSE(records.empty());
    EXPECT_TRUE(std::isfinite(records.back().train_loss));
  }
}

TEST_F(FittingTest, ACheckpointWithoutAnAverageSaysSo) {
  fs::create_directories(dir_);
  testing::save_texture_checkpoint(run("plain.pt"));
  EXPECT_EQ(
      testing::error_of([&] { load_model_average(run("plain.pt")); }),
      run("plain.pt") + ": holds no average of the weights (its run trained without train.ema)");
}

}  // namespace
}  // namespace vit
