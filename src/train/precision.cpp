#include "vit/train/precision.hpp"

#include <ATen/autocast_mode.h>
#include <fmt/format.h>
#include <torch/torch.h>
#include <torch/version.h>

#include "vit/autocast_state.hpp"
#include "vit/build_features.hpp"
#include "vit/error.hpp"

#if VIT_WITH_CUDA
#include <ATen/cuda/CUDAContext.h>
#endif

namespace vit {
bool runs_bf16_end_to_end(Precision precision, c10::Device device, bool bf16_activations) {
  return bf16_activations && precision == Precision::kBf16 && device.is_cuda();
}

std::optional<at::ScalarType> autocast_dtype(Precision precision) {
  switch (precision) {
    case Precision::kFp32:
      return std::nullopt;
    case Precision::kBf16:
      return at::kBFloat16;
    case Precision::kFp16:
      return at::kHalf;
    case Precision::kAuto:
      break;
  }
  throw Error("precision auto has no autocast type: resolve it with choose_precision first");
}

PrecisionHardware precision_hardware(c10::Device device) {
  PrecisionHardware hardware;
  hardware.cpu = cpu_isa();
  hardware.cpu_capped = cpu_isa() < detected_cpu_isa();
#if VIT_WITH_CUDA
  if (device.is_cuda()) {
    const auto* properties = at::cuda::getDeviceProperties(device.has_index() ? device.index() : 0);
    hardware.cuda = true;
    hardware.cuda_major = properties->major;
    hardware.cuda_minor = properties->minor;
  }
#else
  (void)device;
#endif
  return hardware;
}

namespace {

// LibTorch's bf16 matrix products on a CPU without bf16 instructions,
// against fp32 on the same CPU: the demo trained at 43 img/s in bf16 and 797
// in fp32 on an AMD EPYC Zen 3 (docs/benchmarks.md).
constexpr int kEmulatedBf16Slowdown = 18;

// "avx2", or "avx2 as VIT_CPU_ISA allows" under a cap.
std::string isa_text(const PrecisionHardware& h) {
  return std::string(cpu_isa_name(h.cpu)) + (h.cpu_capped ? " as VIT_CPU_ISA allows" : "");
}

PrecisionChoice chosen_automatically(const PrecisionHardware& h) {
  if (h.cuda) {
    const std::string capability = fmt::format("{}.{}", h.cuda_major, h.cuda_minor);
    if (h.cuda_major >= 8)
      return {Precision::kBf16,
              "precision auto: bf16 (CUDA compute capability " + capability + ")",
              {}};
    return {Precision::kFp16,
            "precision auto: fp16 with loss scaling (CUDA compute capability " + capability +
                " has no bf16)",
            {}};
  }
  if (cpu_computes_bf16(h.cpu))
    return {
        Precision::kBf16, "precision auto: bf16 (this CPU computes bf16: " + isa_text(h) + ")", {}};
  return {Precision::kFp32,
          "precision auto: fp32 (this CPU has no bf16 instructions: " + isa_text(h) + ")",
          {}};
}

}  // namespace

PrecisionChoice choose_precision(Precision requested, const PrecisionHardware& hardware) {
  if (requested == Precision::kAuto) return chosen_automatically(hardware);
  if (requested == Precision::kFp16 && !hardware.cuda)
    throw Error("train.precision fp16 needs a CUDA device (on CPU use bf16)");
  PrecisionChoice choice{requested, std::string("precision ") + name_of(requested), {}};
  if (requested == Precision::kBf16 && !hardware.cuda && !cpu_computes_bf16(hardware.cpu))
    choice.warning = fmt::format(
        "precision bf16: this CPU has no bf16 instructions ({}), so LibTorch emulates them, "
        "about {}x slower than fp32 (measured on an AMD Zen 3); precision auto picks fp32 here",
        isa_text(hardware), kEmulatedBf16Slowdown);
  return choice;
}

PrecisionChoice choose_precision(Precision requested, c10::Device device) {
  return choose_precision(requested, precision_hardware(device));
}

Precision evaluation_precision(Precision trained, c10::Device device) {
  if (trained == Precision::kAuto) return choose_precision(trained, device).precision;
  if (trained == Precision::kFp16 && !device.is_cuda()) return Precision::kFp32;
  return trained;
}

AutocastScope::AutocastScope(Precision precision, c10::Device device)
    : device_type_(device.type()) {
  const auto dtype = autocast_dtype(precision);
  if (!dtype) return;
  if (*dtype == at::kHalf && !device.is_cuda())
    throw Error("train.precision fp16 needs a CUDA device (on CPU use bf16)");
  active_ = true;
  previous_enabled_ = autocast_is_on(device_type_);
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
