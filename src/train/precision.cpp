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

std::string evaluation_precision(const std::string& trained, c10::Device device) {
  const auto dtype = autocast_dtype(trained);
  if (dtype == at::kHalf && !device.is_cuda()) return "fp32";
  return trained;
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

namespace {
constexpr double kInitialScale = 65536.0;
constexpr double kGrowth = 2.0, kBackoff = 0.5;
constexpr int64_t kGrowthInterval = 2000;
}  // namespace

LossScaler::LossScaler(bool enabled, c10::Device device) : enabled_(enabled) {
  if (!enabled_) return;
  const auto on_device = torch::TensorOptions().device(device);
  scale_ = torch::full({1}, kInitialScale, on_device.dtype(torch::kFloat32));
  growth_tracker_ = torch::zeros({1}, on_device.dtype(torch::kInt32));
  found_inf_ = torch::zeros({1}, on_device.dtype(torch::kFloat32));
}

at::Tensor LossScaler::scale(const at::Tensor& loss) const {
  return enabled_ ? loss * scale_.squeeze(0) : loss;  // 0-dim: the loss keeps its shape
}

double LossScaler::value() const {
  return enabled_ ? scale_.item<double>() : 1.0;
}

// LibTorch 2.x has GradScaler's fused kernels on every device; 1.13 has them
// on CUDA only, and its CPU build (the only 1.13 line vit builds) runs the
// same arithmetic as plain tensor operations.
#if TORCH_VERSION_MAJOR >= 2
void LossScaler::unscale(at::Tensor& gradients) {
  if (!enabled_) return;
  torch::NoGradGuard no_grad;
  found_inf_.zero_();
  at::_amp_foreach_non_finite_check_and_unscale_({gradients}, found_inf_, scale_.reciprocal());
}

void LossScaler::update() {
  if (!enabled_) return;
  at::_amp_update_scale_(scale_, growth_tracker_, found_inf_, kGrowth, kBackoff, kGrowthInterval);
}
#else
void LossScaler::unscale(at::Tensor& gradients) {
  if (!enabled_) return;
  torch::NoGradGuard no_grad;
  gradients.mul_(scale_.reciprocal());
  found_inf_.copy_(torch::isfinite(gradients).all().logical_not().to(torch::kFloat32).view({1}));
}

void LossScaler::update() {
  if (!enabled_) return;
  const auto overflow = found_inf_ > 0;
  const auto grown = (growth_tracker_ + 1) >= kGrowthInterval;
  scale_.copy_(
      torch::where(overflow, scale_ * kBackoff, torch::where(grown, scale_ * kGrowth, scale_)));
  growth_tracker_.copy_(
      torch::where(overflow | grown, torch::zeros_like(growth_tracker_), growth_tracker_ + 1));
}
#endif

}  // namespace vit
