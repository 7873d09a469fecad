#pragma once
// Whether LibTorch's autocast is on (for the CPU or CUDA), and in which dtype
// on the CPU, across the LibTorch lines (2.4 moved these queries behind a
// device argument).
#include <ATen/autocast_mode.h>
#include <torch/version.h>

namespace vit {

inline bool autocast_is_on(c10::DeviceType type) {
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
  return at::autocast::is_autocast_enabled(type);
#else
  return type == c10::DeviceType::CUDA ? at::autocast::is_enabled()
                                       : at::autocast::is_cpu_enabled();
#endif
}

inline bool cpu_autocast_enabled() {
  return autocast_is_on(c10::DeviceType::CPU);
}

inline bool cpu_autocast_is_bf16() {
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
  return cpu_autocast_enabled() &&
         at::autocast::get_autocast_dtype(c10::DeviceType::CPU) == at::kBFloat16;
#else
  return cpu_autocast_enabled() && at::autocast::get_autocast_cpu_dtype() == at::kBFloat16;
#endif
}

}  // namespace vit
