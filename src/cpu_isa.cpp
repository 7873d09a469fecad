#include "vit/cpu_isa.hpp"

#include <cstdint>
#include <cstdlib>

#include "vit/error.hpp"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#define VIT_X86 1
#else
#define VIT_X86 0
#endif

namespace vit {
namespace {

#if VIT_X86
// CPUID and XGETBV by hand: LibTorch 1.13 offers no bf16 or AMX query (2.x
// has at::cpu::is_avx512_bf16_supported, 1.13 not), Debian's cpuinfo predates
// AMX, and clang's __builtin_cpu_supports (the fuzz and sanitizer builds)
// knows neither "avx512bf16" nor "amx-bf16".
struct Registers {
  unsigned a = 0, b = 0, c = 0, d = 0;
};

Registers cpuid(unsigned leaf, unsigned subleaf) {
  Registers r;
  if (!__get_cpuid_count(leaf, subleaf, &r.a, &r.b, &r.c, &r.d)) return {};
  return r;
}

bool bit(unsigned value, int index) {
  return (value >> index) & 1u;
}

// The register state the operating system saves on a context switch (XCR0):
// without it, a vector unit's registers may not be used even where CPUID
// lists the instructions.
uint64_t os_saved_state() {
  uint32_t low = 0, high = 0;
  __asm__ volatile("xgetbv" : "=a"(low), "=d"(high) : "c"(0));
  return (uint64_t(high) << 32) | low;
}

CpuIsa detect() {
  const Registers basic = cpuid(1, 0);
  const bool osxsave = bit(basic.c, 27), fma = bit(basic.c, 12), avx = bit(basic.c, 28);
  if (!osxsave || !avx || !fma) return CpuIsa::kBaseline;
  const uint64_t xcr0 = os_saved_state();
  const bool ymm_saved = (xcr0 & 0x6) == 0x6;            // SSE and AVX state
  const bool zmm_saved = (xcr0 & 0xE6) == 0xE6;          // plus opmask and the upper ZMM
  const bool tiles_saved = (xcr0 & 0x60000) == 0x60000;  // AMX's TILECFG and TILEDATA
  const Registers extended = cpuid(7, 0);
  if (!ymm_saved || !bit(extended.b, 5)) return CpuIsa::kBaseline;                        // AVX2
  const bool avx512 = bit(extended.b, 16) && bit(extended.b, 30) && bit(extended.b, 31);  // F BW VL
  if (!zmm_saved || !avx512) return CpuIsa::kAvx2;
  // DQ too: every CPU with AVX512_BF16 has it, and the own kernels' bf16 set uses it.
  const bool avx512_bf16 = bit(cpuid(7, 1).a, 5) && bit(extended.b, 17);
  if (!avx512_bf16) return CpuIsa::kAvx512;
  const bool amx_bf16 = bit(extended.d, 22) && bit(extended.d, 24);  // AMX-BF16, AMX-TILE
  // Linux also asks each process to request the tile state (arch_prctl);
  // oneDNN does that itself before it uses AMX.
  return amx_bf16 && tiles_saved ? CpuIsa::kAmx : CpuIsa::kAvx512Bf16;
}
#else
CpuIsa detect() {
  return CpuIsa::kBaseline;
}
#endif

std::optional<std::string> cap_from_environment() {
  const char* text = std::getenv("VIT_CPU_ISA");
  if (text == nullptr || *text == '\0') return std::nullopt;
  return std::string(text);
}

}  // namespace

const char* cpu_isa_name(CpuIsa isa) {
  return enum_name(isa);
}

CpuIsa detected_cpu_isa() {
  static const CpuIsa detected = detect();
  return detected;
}

CpuIsa capped_cpu_isa(CpuIsa detected, const std::optional<std::string>& cap) {
  if (!cap) return detected;
  // A cap names one of the vector instruction sets the own kernels choose
  // between; bf16 and AMX go with AVX-512.
  const auto limit = enum_from_name<CpuIsa>(*cap);
  if (!limit || *limit > CpuIsa::kAvx512)
    throw Error("VIT_CPU_ISA='" + *cap +
                "': expected avx512, avx2 or baseline (the most of this CPU's vector "
                "instructions vit may use), or unset for all of them");
  return detected < *limit ? detected : *limit;
}

CpuIsa cpu_isa() {
  static const CpuIsa isa = capped_cpu_isa(detected_cpu_isa(), cap_from_environment());
  return isa;
}

}  // namespace vit
