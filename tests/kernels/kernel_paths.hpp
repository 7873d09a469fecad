#pragma once
// What a kernel test may assert depends on the path the kernel takes on this
// machine: vit's own kernels (AVX2 or AVX-512, as VIT_CPU_ISA allows) give
// the exactness their headers promise, the same on both; elsewhere
// LibTorch's operators run, and the tests hold them to LibTorch's own values
// (whatever accuracy LibTorch has on that host: an AVX2 host's LibTorch 1.13
// was seen 1.1 bf16 steps off the exact GELU near x = 0.006).
// scripts/test.sh runs these tests under VIT_CPU_ISA=avx2 and =baseline too,
// so every path is exercised on every host.
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

}  // namespace vit::testing
