// train.accum_steps: an optimizer step over micro-batches moves the weights
// as one over the whole batch, alone and on two Gloo ranks, with one
// gradient all-reduce per optimizer step.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "local_ranks.hpp"
#include "synthetic.hpp"
#include "vit/data/batch_source.hpp"
#include "vit/infer/precision.hpp"
#include "vit/train/training_step.hpp"

namespace vit {
namespace {

constexpr int64_t kBatch = 64;

// SGD without clipping, so that the step is lr x the gradient itself: a
// micro-batch loss of the wrong scale moves the weights by the wrong amount.
// (AdamW's first step is about lr x sign(gradient), and clipping rescales the
// gradient: either would hide it.)
Config accumulation_config(int64_t accum_steps) {
  Config c = testing::texture_config();
  c.model.depth = 2;
  c.train.batch_size = kBatch;
  c.train.accum_steps = accum_steps;
  c.train.optimizer = OptimizerRule::kSgd;
  c.train.grad_clip = 0;
  c.validate();
  return c;
}

data::Batch texture_batch() {
  const auto d = testing::texture_dataset(kBatch, 7);
  data::Batch b;
  b.images = (d.images.to(torch::kFloat) / 255.0 - 0.3) / 0.3;
  b.labels = d.labels;
  return b;
}

// Rows [begin, begin + count) of `b`.
data::Batch rows(const data::Batch& b, int64_t begin, int64_t count) {
  return {b.images.narrow(0, begin, count), b.labels.narrow(0, begin, count), {}};
}

// The weights `config` starts from, the same for every run of a test.
VisionTransformer start_weights(const Config& config) {
  torch::manual_seed(3);
  return VisionTransformer(config.model);
}

VisionTransformer copy_of(const VisionTransformer& source) {
  VisionTransformer copy(source->config());
  torch::NoGradGuard no_grad;
  const auto from = source->named_parameters();
  for (auto& p : copy->named_parameters())
    p.value().copy_(from[p.key()]);
  return copy;
}

// Each parameter's change in one optimizer step of `config` on `micro_batches`.
std::vector<torch::Tensor> one_step_changes(const Config& config, const VisionTransformer& start,
                                            const std::vector<data::Batch>& micro_batches,
                                            ProcessGroup* group = nullptr) {
  VisionTransformer model = copy_of(start);
  const c10::Device cpu(c10::kCPU);
  TrainingStep step(model, config.train, choose_precision(Precision::kFp32, cpu), cpu, group);
  step.run(micro_batches, /*lr=*/0.5, /*step=*/0);
  std::vector<torch::Tensor> changes;
  const auto before = start->parameters();
  const auto after = model->parameters();
  for (size_t i = 0; i < after.size(); ++i)
    changes.push_back((after[i] - before[i]).detach());
  return changes;
}

// Every change within 1e-5 of its tensor's largest change: the micro-batches'
// fp32 gradients, summed in another order, differ from the whole batch's by
// float rounding (about 1e-7 relative); a micro-batch loss not divided by
// the count, or divided twice, is off by 75% or more.
void expect_same_changes(const std::vector<torch::Tensor>& got,
                         const std::vector<torch::Tensor>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    const double scale = want[i].abs().max().item<double>();
    ASSERT_GT(scale, 0) << "parameter " << i << " did not move";
    EXPECT_LE((got[i] - want[i]).abs().max().item<double>(), 1e-5 * scale) << "parameter " << i;
  }
}

TEST(GradientAccumulation, FourMicroBatchesOf16MoveTheWeightsAsOneBatchOf64) {
  const auto whole = texture_batch();
  const Config one = accumulation_config(1), four = accumulation_config(4);
  const auto start = start_weights(one);
  const auto want = one_step_changes(one, start, {whole});
  std::vector<data::Batch> micro;
  for (int64_t m = 0; m < 4; ++m)
    micro.push_back(rows(whole, 16 * m, 16));
  expect_same_changes(one_step_changes(four, start, micro), want);
  // The loss of each micro-batch must be divided by their count: undivided,
  // the step is four times the whole batch's.
  auto undivided = want;
  for (auto& t : undivided)
    t = t * 4;
  const auto got = one_step_changes(four, start, micro);
  EXPECT_GT((got[0] - undivided[0]).abs().max().item<double>(),
            0.5 * want[0].abs().max().item<double>());
}

// An epoch's last step, keeping the last partial batch (data.drop_last
// false): 3 of the 4 micro-batches, the last with 10 images, move the weights
// as one batch of 42, each micro-batch's loss weighed by its images.
TEST(GradientAccumulation, AnEpochsPartialLastStepWeighsEachMicroBatchByItsImages) {
  const auto whole = texture_batch();
  const Config one = accumulation_config(1), four = accumulation_config(4);
  const auto start = start_weights(one);
  const auto want = one_step_changes(one, start, {rows(whole, 0, 42)});
  expect_same_changes(
      one_step_changes(four, start, {rows(whole, 0, 16), rows(whole, 16, 16), rows(whole, 32, 10)}),
      want);
}

// Two ranks, each with its half of every micro-batch, average their
// gradients once per optimizer step, and move the weights as one process
// with the whole batch.
TEST(GradientAccumulation, TwoGlooRanksAverageOncePerOptimizerStep) {
  const auto whole = texture_batch();
  const Config one = accumulation_config(1), four = accumulation_config(4);
  const auto start = start_weights(one);
  const auto want = one_step_changes(one, start, {whole});
  std::vector<std::vector<torch::Tensor>> got(2);
  std::vector<int64_t> averages(2);
  testing::run_ranks(2, [&](int rank, ProcessGroup& group) {
    std::vector<data::Batch> micro;  // rows [16m + 8 rank, 16m + 8 rank + 8)
    for (int64_t m = 0; m < 4; ++m)
      micro.push_back(rows(whole, 16 * m + 8 * rank, 8));
    got[rank] = one_step_changes(four, start, micro, &group);
    averages[rank] = group.gradient_averages();
  });
  for (int rank = 0; rank < 2; ++rank) {
    EXPECT_EQ(averages[rank], 1) << "rank " << rank;
    expect_same_changes(got[rank], want);
  }
}

}  // namespace
}  // namespace vit
