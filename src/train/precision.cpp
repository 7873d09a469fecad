#include "vit/train/precision.hpp"

#include <ATen/autocast_mode.h>
#include <torch/torch.h>
#include <torch/version.h>

#include "vit/error.hpp"

namespace vit {
namespace {

// LibTorch 2.4 replaced the per-device autocast functions with ones that take
// the device type; 1.13 (Debian) only has the old ones.
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
bool autocast_enabled(c10::DeviceType type) {
  return at::autocast::is_autocast_enabled(type);
}
void set_autocast(c10::DeviceType type, bool enabled, at::ScalarType dtype) {
  at::autocast::set_autocast_dtype(type, dtype);
  at::autocast::set_autocast_enabled(type, enabled);
}
#else
bool autocast_enabled(c10::DeviceType type) {
  return type == c10::DeviceType::CUDA ? at::autocast::is_enabled()
                                       : at::autocast::is_cpu_enabled();
}
void set_autocast(c10::DeviceType type, bool enabled, at::ScalarType dtype) {
  if (type == c10::DeviceType::CUDA) {
    at::autocast::set_autocast_gpu_dtype(dtype);
    at::autocast::set_enabled(enabled);
  } else {
    at::autocast::set_autocast_cpu_dtype(dtype);
    at::autocast::set_cpu_enabled(enabled);
  }
}
#endif

}  // namespace

std::optional<at::ScalarType> autocast_dtype(const std::string& precision) {
  if (precision == "fp32") return std::nullopt;
  if (precision == "bf16") return at::kBFloat16;
  if (precision == "fp16") return at::kHalf;
  throw Error("train.precision '" + precision + "': expected fp32 | bf16 | fp16");
}

AutocastScope::AutocastScope(const std::string& precision, c10::Device device)
    : device_type_(device.type()) {
  const auto dtype = autocast_dtype(precision);
  if (!dtype) return;
  if (*dtype == at::kHalf && !device.is_cuda())
    throw Error("train.precision fp16 needs a CUDA device (on CPU use bf16)");
  active_ = true;
  previous_enabled_ = autocast_enabled(device_type_);
  set_autocast(device_type_, true, *dtype);
}

AutocastScope::~AutocastScope() {
  if (!active_) return;
  set_autocast(device_type_, previous_enabled_,
               device_type_ == c10::DeviceType::CUDA ? at::kHalf : at::kBFloat16);
  if (!previous_enabled_) at::autocast::clear_cache();
}

bool LossScaler::unscale(at::Tensor& gradients) {
  if (!enabled_) return true;
  torch::NoGradGuard no_grad;
  gradients.div_(scale_);
  return torch::isfinite(gradients).all().item<bool>();
}

void LossScaler::update(bool step_was_finite) {
  if (!enabled_) return;
  if (!step_was_finite) {
    scale_ = std::max(1.0, scale_ / 2.0);
    good_steps_ = 0;
  } else if (++good_steps_ >= 2000) {
    scale_ *= 2.0;
    good_steps_ = 0;
  }
}

}  // namespace vit
