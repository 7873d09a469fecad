#pragma once
// Mixed precision: an autocast scope for bf16/fp16 and the loss scaling that
// fp16 needs (LibTorch's C++ API has no GradScaler).
#include <optional>
#include <string>

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

namespace vit {

// The low-precision type of train.precision: bf16 or fp16, none for fp32.
// Throws vit::Error for any other name.
std::optional<at::ScalarType> autocast_dtype(const std::string& precision);

// Turns autocast on for the device type for the scope's lifetime.
// "fp32" does nothing; "bf16" works on CPU and CUDA; "fp16" needs CUDA.
class AutocastScope {
 public:
  AutocastScope(const std::string& precision, c10::Device device);
  ~AutocastScope();
  AutocastScope(const AutocastScope&) = delete;
  AutocastScope& operator=(const AutocastScope&) = delete;

 private:
  bool active_ = false;
  c10::DeviceType device_type_ = c10::DeviceType::CPU;
  bool previous_enabled_ = false;
};

// Dynamic loss scaling for fp16: scale the loss up, unscale the gradients,
// skip the step and halve the scale on overflow, double it after a run of
// good steps. Disabled (scale 1, never skips) for fp32 and bf16.
class LossScaler {
 public:
  explicit LossScaler(bool enabled) : enabled_(enabled), scale_(enabled ? 65536.0 : 1.0) {}
  at::Tensor scale(const at::Tensor& loss) const { return enabled_ ? loss * scale_ : loss; }
  // Divides the gradients (the optimizer's flat vector) by the scale;
  // returns false when any is not finite.
  bool unscale(at::Tensor& gradients);
  void update(bool step_was_finite);
  double value() const { return scale_; }

 private:
  bool enabled_;
  double scale_;
  int good_steps_ = 0;
};

}  // namespace vit
