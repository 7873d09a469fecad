#pragma once
// LibTorch's autocast state for the CPU or CUDA, read and set the same way on
// both LibTorch lines: 2.4 replaced the per-device functions with ones that
// take the device type, and Debian's 1.13 has only the old ones.
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

// Turns autocast on or off for `type`'s device, in `dtype`.
inline void set_autocast(c10::DeviceType type, bool enabled, at::ScalarType dtype) {
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
  at::autocast::set_autocast_dtype(type, dtype);
  at::autocast::set_autocast_enabled(type, enabled);
#else
  if (type == c10::DeviceType::CUDA) {
    at::autocast::set_autocast_gpu_dtype(dtype);
    at::autocast::set_enabled(enabled);
  } else {
    at::autocast::set_autocast_cpu_dtype(dtype);
    at::autocast::set_cpu_enabled(enabled);
  }
#endif
}

// The dtype autocast casts to on `type`'s device (whether or not it is on).
inline at::ScalarType autocast_dtype_on(c10::DeviceType type) {
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
  return at::autocast::get_autocast_dtype(type);
#else
  return type == c10::DeviceType::CUDA ? at::autocast::get_autocast_gpu_dtype()
                                       : at::autocast::get_autocast_cpu_dtype();
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
