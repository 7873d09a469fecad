#pragma once
// fp16 training's loss scaling (LibTorch's C++ API has no GradScaler).
#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

namespace vit {

// Dynamic loss scaling for fp16: scale the loss up, unscale the gradients,
// skip the step and halve the scale on overflow, double it after 2000 good
// steps in a row (torch.amp.GradScaler's defaults). The scale and the overflow
// flag live on the training device and nothing here waits for the GPU, so the
// step can run inside a CUDA graph. Disabled (scale 1, never skips) for fp32
// and bf16.
class LossScaler {
 public:
  LossScaler(bool enabled, c10::Device device);
  bool enabled() const { return enabled_; }
  // loss x scale (the loss itself when disabled).
  at::Tensor scale(const at::Tensor& loss) const;
  // Divides the gradients (the optimizer's flat vector) by the scale, and sets
  // found_inf() to 1 when any of them is not finite, else 0.
  void unscale(at::Tensor& gradients);
  // float (1) on the device: the last unscale's overflow flag; undefined when
  // disabled. The optimizer skips its step where it holds 1.
  const at::Tensor& found_inf() const { return found_inf_; }
  // Halves the scale after an overflow, doubles it after 2000 good steps.
  void update();
  double value() const;  // the current scale (waits for the device)

 private:
  bool enabled_;
  at::Tensor scale_;           // float (1)
  at::Tensor growth_tracker_;  // int32 (1): good steps since the last change
  at::Tensor found_inf_;       // float (1)
};

}  // namespace vit
