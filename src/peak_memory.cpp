#include "vit/peak_memory.hpp"

#include <fstream>
#include <string>

#include "vit/build_features.hpp"
#include "vit/device.hpp"

#if VIT_WITH_CUDA
#include <c10/cuda/CUDACachingAllocator.h>
#endif

namespace vit {
namespace {

// "VmHWM:    123456 kB" in /proc/self/status.
std::optional<int64_t> resident_high_water_mark() {
  std::ifstream status("/proc/self/status");
  std::string key;
  while (status >> key) {
    if (key == "VmHWM:") {
      int64_t kib = 0;
      if (status >> kib) return kib * 1024;
      return std::nullopt;
    }
    status.ignore(1 << 12, '\n');
  }
  return std::nullopt;
}

}  // namespace

std::optional<int64_t> peak_memory_bytes(c10::Device device) {
  if (device.is_cuda()) return peak_gpu_memory_bytes(device);
  return resident_high_water_mark();
}

void reset_peak_memory(c10::Device device) {
  if (device.is_cuda()) {
#if VIT_WITH_CUDA
    c10::cuda::CUDACachingAllocator::resetPeakStats(device.index());
#endif
    return;
  }
  std::ofstream clear_refs("/proc/self/clear_refs");
  clear_refs << "5";  // 5: reset the peak resident set size
}

}  // namespace vit
