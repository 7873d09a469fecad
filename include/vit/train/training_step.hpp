#pragma once
// One training step, queued without waiting for the device: for each of its
// micro-batches (train.accum_steps), the forward pass in the run's precision,
// the loss (label smoothing; mixup's and cutmix's soft targets) and the
// backward pass, the gradients adding up; then, once, the gradients' average
// across ranks, fp16's loss scaling, clipping and the optimizer. Its statistics add up on the
// device (StepTotals) until the trainer reads them. Where train.cuda_graph
// asks for it, the step is replayed from a CUDA graph (train/cuda_graph_step).
#include <cstdint>
#include <functional>
#include <memory>
#include <utility>
#include <vector>

#include <c10/core/Device.h>

#include "vit/config.hpp"
#include "vit/infer/precision.hpp"
#include "vit/model/vision_transformer.hpp"
#include "vit/train/loss_scaler.hpp"
#include "vit/train/step_profiler.hpp"
#include "vit/train/step_totals.hpp"

namespace vit {

class CudaGraphStep;
class Optimizer;
class ProcessGroup;
class WeightMirror;
namespace data {
struct Batch;
}  // namespace data

class TrainingStep {
 public:
  // `model` is on `device`, its frozen parameters frozen already: the
  // optimizer lays out the others. `group`: the data-parallel world, or null.
  TrainingStep(VisionTransformer model, const TrainConfig& train, PrecisionChoice precision,
               c10::Device device, ProcessGroup* group);
  ~TrainingStep();
  TrainingStep(const TrainingStep&) = delete;
  TrainingStep& operator=(const TrainingStep&) = delete;

  // Step `step` (0-based, of the whole run) at learning rate `lr`, on the
  // micro-batches of one optimizer step (train.accum_steps of them, fewer or
  // smaller at an epoch's end): their gradients add up to the gradient of
  // the mean loss over all their images.
  void run(const std::vector<data::Batch>& micro_batches, double lr, int64_t step);
  // The same, asking `micro_batch` for micro-batch 0 .. count - 1 as the step
  // reaches it, so that eagerly one micro-batch's images are held at a time
  // (a CUDA graph copies them all into its buffers first). `images`: the
  // step's images in all, where an epoch's last step has fewer or smaller
  // micro-batches (each loss then weighs by its images); 0: count equal ones.
  void run(const std::function<data::Batch(int64_t)>& micro_batch, int64_t count, double lr,
           int64_t step, int64_t images = 0);
  // Replays the step from a CUDA graph from now on (after its eager warm-up
  // steps), where train.cuda_graph asks for it on a CUDA device and nothing
  // rules it out (the log says what did).
  void use_cuda_graph_if_wanted(bool wanted);
  // The statistics of the steps since the last read; waits for the device.
  StepTotals::Values read_totals();

  void profile(StepProfiler profiler) { profiler_ = std::move(profiler); }
  const PrecisionChoice& precision() const { return precision_; }
  Optimizer& optimizer() { return *optimizer_; }
  int64_t cuda_graph_replays() const;

 private:
  void eager(const std::function<data::Batch(int64_t)>& micro_batch, int64_t count);
  // Micro-batch `index` of `count`: its forward and backward pass, its loss
  // divided by `count` (by the step's images over its own, for an epoch's
  // last step); returns its loss (undivided, detached) and its logits.
  std::pair<at::Tensor, at::Tensor> forward_backward(const data::Batch& batch, int64_t index,
                                                     int64_t count);

  VisionTransformer model_;
  PrecisionChoice precision_;  // train.precision on device_ ("auto" resolved)
  c10::Device device_;
  ProcessGroup* group_;
  double label_smoothing_, grad_clip_;
  int64_t bucket_bytes_;     // train.dist_bucket_mb
  int64_t step_images_ = 0;  // the running step's images, where run() was given them
  std::unique_ptr<Optimizer> optimizer_;
  std::unique_ptr<WeightMirror> weight_mirror_;  // bf16/fp16 training only
  bool bf16_end_to_end_ = false;                 // no autocast: the mirror holds every parameter
  LossScaler scaler_;
  StepTotals totals_;             // on the device, since the last read
  bool recomputes_random_draws_;  // checkpointed blocks with dropout or drop-path
  StepProfiler profiler_;
  // Last, so that it is destroyed first: the captured graph holds the
  // addresses of the model's, the optimizer's, the loss scaler's and the step
  // totals' buffers, and must not outlive them.
  std::unique_ptr<CudaGraphStep> graph_;
};

}  // namespace vit
