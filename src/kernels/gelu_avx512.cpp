// The exact GELU in AVX-512 intrinsics (see avx512_lanes.hpp for how the
// target attribute keeps them to CPUs that have them).
#include "gelu_avx512.hpp"

#include "avx512_exp.hpp"
#include "avx512_lanes.hpp"

namespace vit::detail {
namespace {

// Abramowitz & Stegun 7.1.26: erfc(z) = t (a1 + t (a2 + t (a3 + t (a4 + t a5)))) exp(-z^2),
// t = 1 / (1 + p z), z >= 0, with an absolute error below 1.5e-7: the
// approximation ATen's vectorised erf uses. Taking erfc directly keeps the
// left tail Phi(-|x|) = erfc(|x| / sqrt 2) / 2 free of 1 + erf's cancellation.
constexpr float kP = 0.3275911f;
constexpr float kA1 = 0.254829592f, kA2 = -0.284496736f, kA3 = 1.421413741f, kA4 = -1.453152027f,
                kA5 = 1.061405429f;
constexpr float kSqrtHalf = 0.70710678118654752f;
constexpr float kInvSqrt2Pi = 0.39894228040143268f;

// Phi(x), the standard normal CDF, and exp(-x^2 / 2), which the derivative
// reuses for the density.
struct Normal {
  __m512 cdf, gauss;
};

VIT_AVX512 inline Normal normal_of(__m512 x) {
  const __m512 z = _mm512_mul_ps(_mm512_abs_ps(x), splat(kSqrtHalf));
  const __m512 t = _mm512_div_ps(splat(1.0f), _mm512_fmadd_ps(splat(kP), z, splat(1.0f)));
  __m512 poly = _mm512_fmadd_ps(splat(kA5), t, splat(kA4));
  poly = _mm512_fmadd_ps(poly, t, splat(kA3));
  poly = _mm512_fmadd_ps(poly, t, splat(kA2));
  poly = _mm512_fmadd_ps(poly, t, splat(kA1));
  poly = _mm512_mul_ps(poly, t);
  const __m512 gauss = exp_nonpositive(_mm512_mul_ps(_mm512_mul_ps(z, z), splat(-1.0f)));
  const __m512 left_tail = _mm512_mul_ps(_mm512_mul_ps(poly, gauss), splat(0.5f));  // Phi(-|x|)
  const __mmask16 non_negative = _mm512_cmp_ps_mask(x, _mm512_setzero_ps(), _CMP_GE_OQ);
  return {_mm512_mask_sub_ps(left_tail, non_negative, splat(1.0f), left_tail), gauss};
}

template <typename T>
VIT_AVX512 void forward(const T* x, T* y, int64_t n) {
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = lanes_left(n - i);
    const __m512 v = load(x + i, m);
    store(y + i, _mm512_mul_ps(v, normal_of(v).cdf), m);
  }
}

template <typename T>
VIT_AVX512 void backward(const T* dy, const T* x, T* dx, int64_t n) {
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = lanes_left(n - i);
    const __m512 v = load(x + i, m);
    const Normal normal = normal_of(v);
    const __m512 slope =
        _mm512_fmadd_ps(_mm512_mul_ps(v, normal.gauss), splat(kInvSqrt2Pi), normal.cdf);
    store(dx + i, _mm512_mul_ps(load(dy + i, m), slope), m);
  }
}

}  // namespace

bool avx512_gelu_supported() {
  return avx512_supported();
}

void gelu_forward_avx512(const float* x, float* y, int64_t n) {
  forward(x, y, n);
}

void gelu_forward_avx512(const c10::BFloat16* x, c10::BFloat16* y, int64_t n) {
  forward(x, y, n);
}

void gelu_backward_avx512(const float* dy, const float* x, float* dx, int64_t n) {
  backward(dy, x, dx, n);
}

void gelu_backward_avx512(const c10::BFloat16* dy, const c10::BFloat16* x, c10::BFloat16* dx,
                          int64_t n) {
  backward(dy, x, dx, n);
}

}  // namespace vit::detail
