#pragma once
// The residual connection after a linear layer, z = x + (y + bias), over rows
// of d contiguous values, forward and backward, in AVX-512 (F, BW, VL); x, z
// and the bias fp32, y fp32 or bf16. Callers check avx512_supported()
// (avx512_lanes.hpp) first; kernels/residual is the only caller.
#include <cstdint>

#include <c10/util/BFloat16.h>

namespace vit::detail {

void biased_residual_forward_avx512(const float* x, const float* y, const float* bias, float* z,
                                    int64_t rows, int64_t d);
void biased_residual_forward_avx512(const float* x, const c10::BFloat16* y, const float* bias,
                                    float* z, int64_t rows, int64_t d);

// Adds each row of dz to dbias (d values, which the caller zeroes first), and
// writes dz rounded to bf16 into dy where dy is not null.
void biased_residual_backward_avx512(const float* dz, c10::BFloat16* dy, float* dbias, int64_t rows,
                                     int64_t d);

}  // namespace vit::detail
