#pragma once
// What this CPU's vector units can do, detected in one place, for the own kernels
// and train.precision "auto". VIT_CPU_ISA caps what vit itself may use, so that one
// machine can test the paths of a lesser one (ATEN_CPU_CAPABILITY and
// ONEDNN_MAX_CPU_ISA stay separate settings).
#include <optional>
#include <string>
#include <utility>

#include "vit/enum_names.hpp"

namespace vit {

// Ordered: each level has everything of the ones before it.
enum class CpuIsa {
  kBaseline,    // x86-64 without AVX2 and FMA, or another architecture
  kAvx2,        // AVX2 and FMA: the own kernels' 8-lane path
  kAvx512,      // AVX-512 F, BW and VL: their 16-lane path
  kAvx512Bf16,  // AVX512_BF16: bf16 products in hardware
  kAmx,         // AMX with bf16 tiles (and AVX512_BF16)
};

template <>
struct EnumNames<CpuIsa> {
  static constexpr std::pair<CpuIsa, const char*> table[] = {{CpuIsa::kBaseline, "baseline"},
                                                             {CpuIsa::kAvx2, "avx2"},
                                                             {CpuIsa::kAvx512, "avx512"},
                                                             {CpuIsa::kAvx512Bf16, "avx512_bf16"},
                                                             {CpuIsa::kAmx, "amx"}};
};

const char* cpu_isa_name(CpuIsa isa);

// What the hardware and the operating system support, uncapped.
CpuIsa detected_cpu_isa();

// The lower of `detected` and the cap, VIT_CPU_ISA's text: "avx512", "avx2" or
// "baseline"; unset or empty: no cap. Throws vit::Error for any other text.
CpuIsa capped_cpu_isa(CpuIsa detected, const std::optional<std::string>& cap);

// detected_cpu_isa() capped by VIT_CPU_ISA, computed once; throws as capped_cpu_isa.
CpuIsa cpu_isa();

// Elsewhere LibTorch emulates bf16 products, many times slower than fp32.
inline bool cpu_computes_bf16(CpuIsa isa) {
  return isa >= CpuIsa::kAvx512Bf16;
}

}  // namespace vit
