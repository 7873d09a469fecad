#pragma once
// A training step replayed from a CUDA graph, which launches a step's few thousand
// kernels at once. The step must not wait for the device or decide anything on the
// host from device values (no .item()). Its micro-batches are copied into static
// buffers before each replay. The first `warmup_steps` steps run eagerly, then the
// next is captured and replayed. A batch of other shapes than the captured one runs
// eagerly; so does every step off CUDA, or after a failed capture (logged once).
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

  void run(const std::vector<data::Batch>& micro_batches);  // eager, captured or replayed
  int64_t replays() const;  // steps run as a replay of the captured graph

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace vit
