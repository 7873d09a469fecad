#pragma once
// What a kernel test may assert depends on the path the kernel takes on this
// machine: vit's own kernels (AVX2 or AVX-512, as VIT_CPU_ISA allows) give
// the exactness their headers promise, the same on both; elsewhere
// LibTorch's operators run, and the tests hold them to LibTorch's own values
// (whatever accuracy LibTorch has on that host: an AVX2 host's LibTorch 1.13
// was seen 1.1 bf16 steps off the exact GELU near x = 0.006).
// scripts/test.sh runs these tests under VIT_CPU_ISA=avx2 and =baseline too,
// so every path is exercised on every host.
#include <exception>
#include <string>

#include <torch/types.h>

#include "vit/cpu_isa.hpp"

namespace vit::testing {

inline bool own_kernels_run() {
  return cpu_isa() >= CpuIsa::kAvx2;
}

inline std::string kernel_path() {
  return std::string("path: ") + (own_kernels_run() ? "own kernels" : "LibTorch's operators") +
         " (VIT_CPU_ISA allows " + cpu_isa_name(cpu_isa()) + ")";
}

// Empty where LibTorch multiplies bf16 tensors on the CPU; otherwise why not.
// scripts/test.sh's AVX2 rerun caps oneDNN too (ONEDNN_MAX_CPU_ISA=AVX2). On a
// CPU with bf16 instructions LibTorch 1.13 asks the CPU, not oneDNN, whether
// bf16 products are there, and the capped oneDNN then refuses them. A real
// AVX2 CPU emulates them, so the tests' bf16 cases skip only under such a cap
// (VIT_CPU_ISA below what the CPU computes), and only if the products fail.
inline std::string cpu_bf16_products_refused() {
  static const std::string reason = []() -> std::string {
    if (cpu_computes_bf16(cpu_isa()) || !cpu_computes_bf16(detected_cpu_isa())) return "";
    try {
      const auto a = torch::ones({64, 64}, torch::kBFloat16);
      (void)a.mm(a);
      return "";
    } catch (const std::exception& e) {
      const std::string what = e.what();
      return "LibTorch's bf16 products fail under the cap (VIT_CPU_ISA allows " +
             std::string(cpu_isa_name(cpu_isa())) +
             ", on a CPU that computes bf16; oneDNN capped too): " +
             what.substr(0, what.find('\n'));
    }
  }();
  return reason;
}

}  // namespace vit::testing
