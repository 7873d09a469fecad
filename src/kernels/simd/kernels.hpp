#pragma once
// The own CPU kernels, one set per instruction set: detail::avx512_bf16
// and detail::avx512 (16 lanes), detail::avx2 (8 lanes), the same
// arithmetic lane by lane (avx512_bf16 narrows to bf16 in hardware; see
// avx512.hpp). Their bodies are written once (kernels/simd/*.inc) in the
// lane functions of avx512.hpp and avx2.hpp, and compiled once per set by
// kernels_avx512_bf16.cpp, kernels_avx512.cpp and kernels_avx2.cpp.
#include <cstdint>

#include <c10/util/BFloat16.h>

namespace vit::detail {

// Which set the kernels run: the best that cpu_isa() (VIT_CPU_ISA's cap
// included) allows; kNone where the CPU has neither, and LibTorch's
// operators run instead.
enum class SimdLevel { kNone, kAvx2, kAvx512, kAvx512Bf16 };
SimdLevel simd_level();

// An AdamW step's constants for adamw_update (kernels.inc), each computed
// in double and rounded once, as LibTorch rounds its operators' scalars:
// rest1 = 1 - beta1, rest2 = 1 - beta2, decay = 1 - lr weight_decay,
// step_size = lr / (1 - beta1^t), sqrt_correction2 = sqrt(1 - beta2^t).
struct AdamWStep {
  float beta1, rest1, beta2, rest2, decay, step_size, sqrt_correction2, eps;
};

namespace avx512_bf16 {
#include "kernels.inc"
}  // namespace avx512_bf16

namespace avx512 {
#include "kernels.inc"
}  // namespace avx512

namespace avx2 {
#include "kernels.inc"
}  // namespace avx2

}  // namespace vit::detail

// Runs `call`, a kernel's call written without its namespace, in the set
// that simd_level() picked; callers have checked that it is not kNone.
#define VIT_SIMD_DISPATCH(call)                                         \
  (::vit::detail::simd_level() == ::vit::detail::SimdLevel::kAvx512Bf16 \
       ? ::vit::detail::avx512_bf16::call                               \
   : ::vit::detail::simd_level() == ::vit::detail::SimdLevel::kAvx512   \
       ? ::vit::detail::avx512::call                                    \
       : ::vit::detail::avx2::call)
