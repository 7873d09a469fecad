#pragma once
// LayerNorm over rows of d contiguous fp32 values, forward and backward, in
// AVX-512 (F, BW, VL), the output or its gradient in fp32 or bf16. Callers
// check avx512_supported() (avx512_lanes.hpp) first; kernels/layer_norm is the
// only caller.
#include <cstdint>

#include <c10/util/BFloat16.h>

namespace vit::detail {

// y = (x - mean) rstd gamma + beta for each row, rstd = 1 / sqrt(var + eps)
// with the biased variance, as torch::layer_norm; writes each row's mean and
// rstd for the backward.
void layer_norm_forward_avx512(const float* x, const float* gamma, const float* beta, float* y,
                               float* mean, float* rstd, int64_t rows, int64_t d, float eps);
void layer_norm_forward_avx512(const float* x, const float* gamma, const float* beta,
                               c10::BFloat16* y, float* mean, float* rstd, int64_t rows, int64_t d,
                               float eps);

// For each row, with xhat = (x - mean) rstd and g = dy gamma:
// dx = rstd (g - mean(g) - xhat mean(g xhat)); adds dy xhat to dgamma and dy
// to dbeta (d values each), which the caller zeroes first.
void layer_norm_backward_avx512(const float* dy, const float* x, const float* gamma,
                                const float* mean, const float* rstd, float* dx, float* dgamma,
                                float* dbeta, int64_t rows, int64_t d);
void layer_norm_backward_avx512(const c10::BFloat16* dy, const float* x, const float* gamma,
                                const float* mean, const float* rstd, float* dx, float* dgamma,
                                float* dbeta, int64_t rows, int64_t d);

}  // namespace vit::detail
