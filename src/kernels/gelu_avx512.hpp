#pragma once
// The exact (erf) GELU and its derivative over contiguous fp32 or bf16
// arrays, in AVX-512 (F, BW, VL). Callers check avx512_gelu_supported()
// first; kernels/gelu is the only caller.
#include <cstdint>

#include <c10/util/BFloat16.h>

namespace vit::detail {

bool avx512_gelu_supported();

// y[i] = x[i] * Phi(x[i]), Phi the standard normal CDF.
void gelu_forward_avx512(const float* x, float* y, int64_t n);
void gelu_forward_avx512(const c10::BFloat16* x, c10::BFloat16* y, int64_t n);

// dx[i] = dy[i] * (Phi(x[i]) + x[i] * phi(x[i])), phi the standard normal density.
void gelu_backward_avx512(const float* dy, const float* x, float* dx, int64_t n);
void gelu_backward_avx512(const c10::BFloat16* dy, const c10::BFloat16* x, c10::BFloat16* dx,
                          int64_t n);

}  // namespace vit::detail
