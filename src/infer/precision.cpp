#include "vit/infer/precision.hpp"

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
  PrecisionChoice choice{requested, std::string("precision ") + enum_name(requested), {}};
  if (requested == Precision::kBf16 && !hardware.cuda && !cpu_computes_bf16(hardware.cpu))
    choice.warning = fmt::format(
        "precision bf16: this CPU has no bf16 instructions ({}), so LibTorch emulates them, "
        "far slower than fp32; use precision fp32 or auto (auto picks fp32 here)",
        isa_text(hardware));
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

}  // namespace vit
