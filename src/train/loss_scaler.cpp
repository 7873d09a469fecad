#include "vit/train/loss_scaler.hpp"

#include <torch/torch.h>
#include <torch/version.h>

namespace vit {

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
