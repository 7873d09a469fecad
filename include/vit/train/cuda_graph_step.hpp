#pragma once
// A training step replayed from a CUDA graph. Launching the few thousand
// kernels of a ViT step one by one costs the host more time than small
// batches take on the GPU; a graph captured once launches them all at once.
//
// The step must not wait for the device or decide anything on the host from
// device values (no .item()): the trainer's step, the optimizer (learning rate
// and step count on the device), fp16's loss scaler and StepTotals are built
// so. Its inputs, the micro-batches of one optimizer step, are copied into
// static buffers before each replay.
//
// The first `warmup_steps` steps run eagerly on a side stream (cuBLAS and the
// allocator settle there, as CUDA graphs require), then the next step is
// captured and replayed. A batch of other shapes than the captured one runs
// eagerly; so does every step on a device other than CUDA, in a build without
// CUDA, or after a failed capture (logged once).
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <c10/core/Device.h>

#include "vit/data/batch_loader.hpp"

namespace vit {

class CudaGraphStep {
 public:
  // An optimizer step on its micro-batches.
  using Step = std::function<void(const std::vector<data::Batch>&)>;

  CudaGraphStep(Step step, c10::Device device, int64_t warmup_steps = 3);
  ~CudaGraphStep();

  // Runs the step on `micro_batches`: eagerly, captured, or replayed (see above).
  void run(const std::vector<data::Batch>& micro_batches);
  int64_t replays() const;  // steps run as a replay of the captured graph

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace vit
