#pragma once
// The own CPU kernels, one set per instruction set with the same arithmetic lane by
// lane: detail::avx512_bf16 and detail::avx512 (16 lanes), detail::avx2 (8 lanes).
// Written once (kernels/simd/*.inc), compiled once per set by kernels_*.cpp.
#include <cstdint>

#include <c10/util/BFloat16.h>

namespace vit::detail {

// The best set cpu_isa() allows; kNone: LibTorch's operators run instead.
enum class SimdLevel { kNone, kAvx2, kAvx512, kAvx512Bf16 };
SimdLevel simd_level();

// adamw_update's constants, each computed in double and rounded once, as LibTorch
// rounds its operators' scalars: rest1 = 1 - beta1, rest2 = 1 - beta2, decay =
// 1 - lr weight_decay, step_size = lr / (1 - beta1^t), sqrt_correction2 =
// sqrt(1 - beta2^t).
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

// Runs `call`, written without its namespace, in simd_level()'s set (not kNone).
#define VIT_SIMD_DISPATCH(call)                                         \
  (::vit::detail::simd_level() == ::vit::detail::SimdLevel::kAvx512Bf16 \
       ? ::vit::detail::avx512_bf16::call                               \
   : ::vit::detail::simd_level() == ::vit::detail::SimdLevel::kAvx512   \
       ? ::vit::detail::avx512::call                                    \
       : ::vit::detail::avx2::call)
