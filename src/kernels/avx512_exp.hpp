#pragma once
// exp over 16 fp32 lanes in AVX-512, for the kernels of kernels/ whose
// arguments are never positive (the GELU's Gaussian, the softmax's shifted
// scores). See avx512_lanes.hpp for the target attribute.
#include "avx512_lanes.hpp"

namespace vit::detail {

// exp(y) for y <= 0 (or NaN): y = n ln 2 + r with |r| <= ln 2 / 2 (Cody-Waite,
// ln 2 in two parts as Cephes splits it), exp(r) by its Taylor series to r^6
// (relative error below 2e-7), and 2^n applied by vscalefps, which goes
// smoothly to 0 below float's range.
VIT_AVX512 inline __m512 exp_nonpositive(__m512 y) {
  y = _mm512_max_ps(splat(-104.0f), y);  // max_ps returns its second operand for NaN
  const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(y, splat(1.44269504088896341f)),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, splat(0.693359375f), y);
  r = _mm512_fnmadd_ps(n, splat(-2.12194440e-4f), r);
  __m512 p = splat(1.0f / 720.0f);
  p = _mm512_fmadd_ps(p, r, splat(1.0f / 120.0f));
  p = _mm512_fmadd_ps(p, r, splat(1.0f / 24.0f));
  p = _mm512_fmadd_ps(p, r, splat(1.0f / 6.0f));
  p = _mm512_fmadd_ps(p, r, splat(0.5f));
  p = _mm512_fmadd_ps(p, r, splat(1.0f));
  p = _mm512_fmadd_ps(p, r, splat(1.0f));
  return _mm512_scalef_ps(p, n);
}

}  // namespace vit::detail
