#pragma once
// softmax(scale x) over rows of n contiguous values, forward and backward, in
// AVX-512 (F, BW, VL), computed in fp32 whatever the storage (fp32 or bf16).
// Callers check avx512_supported() (avx512_lanes.hpp) first; kernels/softmax is
// the only caller.
#include <cstdint>

#include <c10/util/BFloat16.h>

namespace vit::detail {

// y = exp(scale x - max(scale x)) / sum(exp(scale x - max(scale x))), row by row.
void softmax_forward_avx512(const float* x, float* y, int64_t rows, int64_t n, float scale);
void softmax_forward_avx512(const float* x, c10::BFloat16* y, int64_t rows, int64_t n, float scale);
void softmax_forward_avx512(const c10::BFloat16* x, float* y, int64_t rows, int64_t n, float scale);
void softmax_forward_avx512(const c10::BFloat16* x, c10::BFloat16* y, int64_t rows, int64_t n,
                            float scale);

// dx = scale y (dy - sum(y dy)), row by row: the gradient of x given the
// forward's output y and the output's gradient dy.
void softmax_backward_avx512(const float* dy, const float* y, float* dx, int64_t rows, int64_t n,
                             float scale);
void softmax_backward_avx512(const float* dy, const float* y, c10::BFloat16* dx, int64_t rows,
                             int64_t n, float scale);
void softmax_backward_avx512(const c10::BFloat16* dy, const c10::BFloat16* y, float* dx,
                             int64_t rows, int64_t n, float scale);
void softmax_backward_avx512(const c10::BFloat16* dy, const c10::BFloat16* y, c10::BFloat16* dx,
                             int64_t rows, int64_t n, float scale);

}  // namespace vit::detail
