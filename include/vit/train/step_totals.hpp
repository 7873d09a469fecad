#pragma once
// The training statistics of the steps since the last read, gathered on the device:
// adding a step never waits for it (so a step can be captured in a CUDA graph);
// read() does. The first step whose loss or gradient norm was not finite is kept,
// so a run that reads every N steps still names it.
#include <cstdint>
#include <string>

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

namespace vit {

class StepTotals {
 public:
  explicit StepTotals(c10::Device device);

  // One step: its mean loss (0-dim float), the images it classified right (0-dim
  // int64), its gradient norm before clipping (0-dim; undefined when not clipping) and
  // fp16's overflow flag (float (1); undefined without loss scaling). A non-finite
  // norm counts only where the flag is 0 (the loss scaler skips and retries).
  void add(const at::Tensor& loss, const at::Tensor& correct, const at::Tensor& grad_norm,
           const at::Tensor& overflow);

  struct Values {
    double loss_sum = 0;  // sum of the steps' mean losses
    int64_t correct = 0;
    int64_t steps = 0;
    int64_t first_non_finite = 0;  // counted from 1 since the last reset; 0: none
    std::string non_finite_what;   // "training loss" | "gradient norm"
    double non_finite_value = 0;
  };
  Values read() const;  // waits for the device
  void reset();         // the next interval starts (queued on the device)

 private:
  // double (6) on the device: loss sum, correct, steps, first non-finite step,
  // its kind (1 loss, 2 norm), its value.
  at::Tensor sums_;
};

}  // namespace vit
