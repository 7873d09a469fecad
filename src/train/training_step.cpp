#include "vit/train/training_step.hpp"

#include <optional>
#include <string>

#include <spdlog/spdlog.h>
#include <torch/torch.h>

#include "vit/data/batch_source.hpp"
#include "vit/model/weight_substitution.hpp"
#include "vit/train/cuda_graph_step.hpp"
#include "vit/train/distributed.hpp"
#include "vit/train/optimizer.hpp"
#include "vit/train/weight_mirror.hpp"

namespace vit {
namespace {

// Cross-entropy against soft targets (B, K) from mixup/cutmix, with the same
// label smoothing as the hard-label loss.
torch::Tensor soft_target_loss(const torch::Tensor& logits, const torch::Tensor& targets,
                               double smoothing) {
  const auto k = static_cast<double>(logits.size(1));
  const auto smoothed = targets * (1.0 - smoothing) + smoothing / k;  // (B, K)
  return -(smoothed * torch::log_softmax(logits, /*dim=*/1)).sum(/*dim=*/1).mean();
}

// 1 (float (1), on the device) where a step must not reach the weights:
// fp16's overflow (the scaler retries with a smaller scale), or a loss or
// gradient norm that is not finite (StepTotals records it, and the run stops
// at the next read). Computed on the device, so nothing waits for it.
at::Tensor skip_flag(const at::Tensor& loss, const at::Tensor& grad_norm,
                     const at::Tensor& overflow) {
  auto bad = torch::isfinite(loss.detach()).logical_not();
  if (grad_norm.defined()) bad = bad.logical_or(torch::isfinite(grad_norm).logical_not());
  const auto flag = bad.to(torch::kFloat32).view({1});
  return overflow.defined() ? torch::maximum(flag, overflow) : flag;
}

}  // namespace

TrainingStep::TrainingStep(VisionTransformer model, const TrainConfig& train,
                           PrecisionChoice precision, c10::Device device, ProcessGroup* group)
    : model_(std::move(model)),
      precision_(std::move(precision)),
      device_(device),
      group_(group),
      label_smoothing_(train.label_smoothing),
      grad_clip_(train.grad_clip),
      bucket_bytes_(static_cast<int64_t>(train.dist_bucket_mb * (1 << 20))),
      optimizer_(make_optimizer(model_, train)),
      bf16_end_to_end_(runs_bf16_end_to_end(precision_.precision, device_, train.bf16_activations)),
      scaler_(precision_.precision == Precision::kFp16, device_),
      totals_(device_),
      recomputes_random_draws_(train.grad_checkpointing.every > 0 &&
                               model_->config().draws_random_numbers_in_blocks()) {
  if (const auto dtype = autocast_dtype(precision_.precision))
    weight_mirror_ = std::make_unique<WeightMirror>(
        model_, *optimizer_, *dtype,
        bf16_end_to_end_ ? MirrorScope::kAllParameters : MirrorScope::kMatrixProducts);
  if (bf16_end_to_end_)
    spdlog::info(
        "the step runs in bf16 end to end, from bf16 copies of the weights "
        "(train.bf16_activations; false = autocast)");
}

TrainingStep::~TrainingStep() = default;

void TrainingStep::run(const std::vector<data::Batch>& micro_batches, double lr, int64_t step) {
  int64_t images = 0;
  for (const auto& batch : micro_batches)
    images += batch.labels.size(0);
  run([&](int64_t m) { return micro_batches[static_cast<size_t>(m)]; },
      static_cast<int64_t>(micro_batches.size()), lr, step, images);
}

// The loss is the cross-entropy with label smoothing, on mixup's and cutmix's soft
// targets where they apply. A CUDA graph copies every micro-batch into its buffers
// before the replay; eagerly, one micro-batch's images are held at a time.
void TrainingStep::run(const std::function<data::Batch(int64_t)>& micro_batch, int64_t count,
                       double lr, int64_t step, int64_t images) {
  step_images_ = images;
  profiler_.before_step(step);
  optimizer_->set_learning_rate(lr);
  if (graph_) {
    std::vector<data::Batch> all;
    for (int64_t m = 0; m < count; ++m)
      all.push_back(micro_batch(m));
    graph_->run(all);
  } else {
    eager(micro_batch, count);
  }
  profiler_.after_step(step);
}

std::pair<at::Tensor, at::Tensor> TrainingStep::forward_backward(const data::Batch& batch,
                                                                 int64_t index, int64_t count) {
  // Each micro-batch's gradients reach the fp32 vector apart, so that they
  // add up in fp32, not in the low-precision copies.
  if (weight_mirror_ && index > 0) weight_mirror_->zero_gradients();
  torch::Tensor logits;
  {
    std::optional<AutocastScope> autocast;
    if (!bf16_end_to_end_) autocast.emplace(precision_.precision, device_);
    std::optional<WeightSubstitution> low_precision_weights;
    if (weight_mirror_) low_precision_weights.emplace(weight_mirror_->substitutes());
    logits = model_->forward(bf16_end_to_end_ ? batch.images.to(torch::kBFloat16) : batch.images);
  }
  logits = logits.to(torch::kFloat);  // (B, K); the loss is computed in fp32
  const auto loss =
      batch.targets.defined()
          ? soft_target_loss(logits, batch.targets, label_smoothing_)
          : torch::nn::functional::cross_entropy(
                logits, batch.labels,
                torch::nn::functional::CrossEntropyFuncOptions().label_smoothing(label_smoothing_));
  // Its share of the step's mean: 1 / count for equal micro-batches.
  const double parts = step_images_ > 0
                           ? static_cast<double>(step_images_) / double(batch.labels.size(0))
                           : static_cast<double>(count);
  scaler_.scale(parts != 1.0 ? loss / parts : loss).backward();
  if (weight_mirror_) weight_mirror_->collect_gradients();
  return {loss.detach(), logits.detach()};
}

void TrainingStep::eager(const std::function<data::Batch(int64_t)>& micro_batch, int64_t count) {
  model_->train();
  optimizer_->zero_grad();
  if (weight_mirror_) weight_mirror_->refresh();
  at::Tensor loss, correct;  // the step's mean loss, and its right answers
  for (int64_t m = 0; m < count; ++m) {
    const data::Batch batch = micro_batch(m);  // held for this micro-batch alone
    auto [micro_loss, logits] = forward_backward(batch, m, count);
    const auto micro_correct = logits.argmax(/*dim=*/1).eq(batch.labels).sum();
    loss = loss.defined() ? loss + micro_loss : micro_loss;
    correct = correct.defined() ? correct + micro_correct : micro_correct;
  }
  if (count > 1) loss = loss / static_cast<double>(count);  // the logged mean
  // Once per optimizer step, not per micro-batch (DDP's no_sync).
  if (group_) group_->average_gradients(optimizer_->gradients(), bucket_bytes_);
  scaler_.unscale(optimizer_->gradients());
  torch::NoGradGuard no_grad;
  at::Tensor norm;
  if (grad_clip_ > 0) norm = optimizer_->clip_gradient_norm(grad_clip_);
  optimizer_->step(skip_flag(loss, norm, scaler_.found_inf()));
  scaler_.update();
  totals_.add(loss, correct, norm, scaler_.found_inf());
}

StepTotals::Values TrainingStep::read_totals() {
  StepTotals::Values values = totals_.read();  // waits for the device
  totals_.reset();
  return values;
}

void TrainingStep::use_cuda_graph_if_wanted(bool wanted) {
  if (!device_.is_cuda() || !wanted) return;
  std::string why_not;  // a CUDA device means a LibTorch with CUDA
  if (group_) why_not = "not yet under torchrun";
  if (recomputes_random_draws_)
    why_not =
        "train.grad_checkpointing replays the blocks' dropout and drop-path draws from the "
        "generator's state, which a captured graph cannot read";
  if (profiler_.active()) why_not = "--profile records every operator eagerly";
  if (!why_not.empty()) {
    spdlog::info("train.cuda_graph: the step runs eagerly ({})", why_not);
    return;
  }
  graph_ = std::make_unique<CudaGraphStep>(
      [this](const std::vector<data::Batch>& micro_batches) {
        eager([&](int64_t m) { return micro_batches[static_cast<size_t>(m)]; },
              static_cast<int64_t>(micro_batches.size()));
      },
      device_);
}

int64_t TrainingStep::cuda_graph_replays() const {
  return graph_ ? graph_->replays() : 0;
}

}  // namespace vit
