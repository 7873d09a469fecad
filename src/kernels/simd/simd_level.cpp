#include "kernels.hpp"

#include "vit/cpu_isa.hpp"

namespace vit::detail {

SimdLevel simd_level() {
  static const SimdLevel level = [] {
    const CpuIsa isa = cpu_isa();
    if (isa >= CpuIsa::kAvx512Bf16) return SimdLevel::kAvx512Bf16;
    if (isa >= CpuIsa::kAvx512) return SimdLevel::kAvx512;
    return isa >= CpuIsa::kAvx2 ? SimdLevel::kAvx2 : SimdLevel::kNone;
  }();
  return level;
}

}  // namespace vit::detail
