#pragma once
// One training step, queued without waiting for the device: forward, loss and
// backward for each micro-batch, the gradients adding up; then, once, the average
// across ranks, fp16's loss scaling, clipping and the optimizer. Its statistics add
// up on the device until the trainer reads them. Replayed from a CUDA graph where
// train.cuda_graph asks for it.
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
  // `model` is on `device`, its frozen parameters frozen already. `group`: the
  // data-parallel world, or null.
  TrainingStep(VisionTransformer model, const TrainConfig& train, PrecisionChoice precision,
               c10::Device device, ProcessGroup* group);
  ~TrainingStep();
  TrainingStep(const TrainingStep&) = delete;
  TrainingStep& operator=(const TrainingStep&) = delete;

  // Step `step` (0-based, of the whole run) at `lr`, on the micro-batches of one
  // optimizer step: their gradients add up to the mean loss's over all their images.
  void run(const std::vector<data::Batch>& micro_batches, double lr, int64_t step);
  // The same, asking `micro_batch` for micro-batch 0 .. count - 1 as the step
  // reaches it, so that eagerly one micro-batch's images are held at a time.
  // `images`: the step's images in all, for an epoch's last step of fewer or
  // smaller micro-batches; 0: count equal ones.
  void run(const std::function<data::Batch(int64_t)>& micro_batch, int64_t count, double lr,
           int64_t step, int64_t images = 0);
  // From now on (after eager warm-up steps), on a CUDA device where nothing rules it
  // out (the log says what did).
  void use_cuda_graph_if_wanted(bool wanted);
  // The steps' statistics since the last read; waits for the device.
  StepTotals::Values read_totals();

  void profile(StepProfiler profiler) { profiler_ = std::move(profiler); }
  const PrecisionChoice& precision() const { return precision_; }
  Optimizer& optimizer() { return *optimizer_; }
  int64_t cuda_graph_replays() const;

 private:
  void eager(const std::function<data::Batch(int64_t)>& micro_batch, int64_t count);
  // Backpropagates the loss divided by `count` (by the step's images over its
  // own, for an epoch's last step); returns the undivided loss (detached) and
  // the logits.
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
  // Last, so that it is destroyed first: the captured graph holds the addresses of
  // the buffers above and must not outlive them.
  std::unique_ptr<CudaGraphStep> graph_;
};

}  // namespace vit
