#pragma once
// The training statistics of the steps since the last read, gathered where
// the steps run. Adding a step only queues a few small operators on its
// device and never waits for it, so a GPU runs ahead of the host and the step
// can be captured in a CUDA graph; read() waits for the device.
//
// It also remembers the first step whose loss or gradient norm was not finite,
// so a run that reads every N steps still names the step that went wrong.
#include <cstdint>
#include <string>

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

namespace vit {

class StepTotals {
 public:
  explicit StepTotals(c10::Device device);

  // One step: its mean loss (0-dim, any float type), the images it classified
  // right (0-dim int64), its gradient norm before clipping (0-dim; undefined
  // when not clipping) and fp16's overflow flag (float (1); undefined without
  // loss scaling). A non-finite norm counts only where the flag is 0: the
  // loss scaler skips those steps and retries with a smaller scale.
  void add(const at::Tensor& loss, const at::Tensor& correct, const at::Tensor& grad_norm,
           const at::Tensor& overflow);

  struct Values {
    double loss_sum = 0;  // sum of the steps' mean losses
    int64_t correct = 0;
    int64_t steps = 0;
    // The first step, counted from 1 since the last reset, whose loss or
    // gradient norm was not finite; 0 when none was.
    int64_t first_non_finite = 0;
    std::string non_finite_what;  // "training loss" | "gradient norm"
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
