// LayerNorm in AVX-512 intrinsics (see avx512_lanes.hpp for how the target
// attribute keeps them to CPUs that have them). Each row is read a few times
// from L1: a row of a ViT's tokens is a few hundred floats.
#include "layer_norm_avx512.hpp"

#include <cmath>

#include "avx512_lanes.hpp"

namespace vit::detail {
namespace {

// The sum of a row's values, two accumulators so the adds overlap.
VIT_AVX512 inline float row_sum(const float* x, int64_t d) {
  __m512 even = _mm512_setzero_ps(), odd = _mm512_setzero_ps();
  for (int64_t i = 0; i < d; i += 32) {
    even = _mm512_add_ps(even, load(x + i, lanes_left(d - i)));
    odd = _mm512_add_ps(odd, load(x + i + 16, lanes_left(d - i - 16)));
  }
  return _mm512_reduce_add_ps(_mm512_add_ps(even, odd));
}

// The sum of (x - mean)^2 over a row: the variance's second pass, which
// keeps the cancellation of E[x^2] - mean^2 out.
VIT_AVX512 inline float row_squared_deviation(const float* x, float mean, int64_t d) {
  const __m512 mu = splat(mean);
  __m512 even = _mm512_setzero_ps(), odd = _mm512_setzero_ps();
  for (int64_t i = 0; i < d; i += 32) {
    const __mmask16 m0 = lanes_left(d - i), m1 = lanes_left(d - i - 16);
    const __m512 c0 = _mm512_maskz_sub_ps(m0, load(x + i, m0), mu);
    const __m512 c1 = _mm512_maskz_sub_ps(m1, load(x + i + 16, m1), mu);
    even = _mm512_fmadd_ps(c0, c0, even);
    odd = _mm512_fmadd_ps(c1, c1, odd);
  }
  return _mm512_reduce_add_ps(_mm512_add_ps(even, odd));
}

template <typename T>
VIT_AVX512 void forward(const float* x, const float* gamma, const float* beta, T* y, float* mean,
                        float* rstd, int64_t rows, int64_t d, float eps) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * d;
    T* yr = y + r * d;
    const float mu = row_sum(xr, d) / float(d);
    const float rs = 1.0f / std::sqrt(row_squared_deviation(xr, mu, d) / float(d) + eps);
    mean[r] = mu;
    rstd[r] = rs;
    const __m512 vmu = splat(mu), vrs = splat(rs);
    for (int64_t i = 0; i < d; i += 16) {
      const __mmask16 m = lanes_left(d - i);
      const __m512 xhat = _mm512_mul_ps(_mm512_sub_ps(load(xr + i, m), vmu), vrs);
      store(yr + i, _mm512_fmadd_ps(xhat, load(gamma + i, m), load(beta + i, m)), m);
    }
  }
}

template <typename T>
VIT_AVX512 void backward(const T* dy, const float* x, const float* gamma, const float* mean,
                         const float* rstd, float* dx, float* dgamma, float* dbeta, int64_t rows,
                         int64_t d) {
  for (int64_t r = 0; r < rows; ++r) {
    const T* dyr = dy + r * d;
    const float* xr = x + r * d;
    float* dxr = dx + r * d;
    const __m512 vmu = splat(mean[r]), vrs = splat(rstd[r]);
    // Pass 1: sum(g), sum(g xhat), and the parameters' gradients. Masked-off
    // lanes load dy = gamma = 0, so they add nothing.
    __m512 g_sum = _mm512_setzero_ps(), g_xhat_sum = _mm512_setzero_ps();
    for (int64_t i = 0; i < d; i += 16) {
      const __mmask16 m = lanes_left(d - i);
      const __m512 grad = load(dyr + i, m);
      const __m512 xhat = _mm512_mul_ps(_mm512_sub_ps(load(xr + i, m), vmu), vrs);
      const __m512 g = _mm512_mul_ps(grad, load(gamma + i, m));
      g_sum = _mm512_add_ps(g_sum, g);
      g_xhat_sum = _mm512_fmadd_ps(g, xhat, g_xhat_sum);
      store(dgamma + i, _mm512_fmadd_ps(grad, xhat, load(dgamma + i, m)), m);
      store(dbeta + i, _mm512_add_ps(grad, load(dbeta + i, m)), m);
    }
    const __m512 g_mean = splat(_mm512_reduce_add_ps(g_sum) / float(d));
    const __m512 g_xhat_mean = splat(_mm512_reduce_add_ps(g_xhat_sum) / float(d));
    // Pass 2: dx = rstd (g - mean(g) - xhat mean(g xhat)).
    for (int64_t i = 0; i < d; i += 16) {
      const __mmask16 m = lanes_left(d - i);
      const __m512 xhat = _mm512_mul_ps(_mm512_sub_ps(load(xr + i, m), vmu), vrs);
      const __m512 g = _mm512_mul_ps(load(dyr + i, m), load(gamma + i, m));
      const __m512 centred = _mm512_fnmadd_ps(xhat, g_xhat_mean, _mm512_sub_ps(g, g_mean));
      store(dxr + i, _mm512_mul_ps(centred, vrs), m);
    }
  }
}

}  // namespace

void layer_norm_forward_avx512(const float* x, const float* gamma, const float* beta, float* y,
                               float* mean, float* rstd, int64_t rows, int64_t d, float eps) {
  forward(x, gamma, beta, y, mean, rstd, rows, d, eps);
}

void layer_norm_forward_avx512(const float* x, const float* gamma, const float* beta,
                               c10::BFloat16* y, float* mean, float* rstd, int64_t rows, int64_t d,
                               float eps) {
  forward(x, gamma, beta, y, mean, rstd, rows, d, eps);
}

void layer_norm_backward_avx512(const float* dy, const float* x, const float* gamma,
                                const float* mean, const float* rstd, float* dx, float* dgamma,
                                float* dbeta, int64_t rows, int64_t d) {
  backward(dy, x, gamma, mean, rstd, dx, dgamma, dbeta, rows, d);
}

void layer_norm_backward_avx512(const c10::BFloat16* dy, const float* x, const float* gamma,
                                const float* mean, const float* rstd, float* dx, float* dgamma,
                                float* dbeta, int64_t rows, int64_t d) {
  backward(dy, x, gamma, mean, rstd, dx, dgamma, dbeta, rows, d);
}

}  // namespace vit::detail
