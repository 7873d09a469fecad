// The softmax in AVX-512 intrinsics (see avx512_lanes.hpp for how the target
// attribute keeps them to CPUs that have them).
#include "softmax_avx512.hpp"

#include <limits>
#include <vector>

#include "avx512_exp.hpp"
#include "avx512_lanes.hpp"

namespace vit::detail {
namespace {

// The row's largest scale x. Lanes past the row's end stay at -inf; a NaN in
// the row may or may not win, and the exp below turns the row to NaN anyway.
template <typename T>
VIT_AVX512 float row_max(const T* x, int64_t n, __m512 scale) {
  __m512 best = splat(-std::numeric_limits<float>::infinity());
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = lanes_left(n - i);
    best = _mm512_mask_max_ps(best, m, best, _mm512_mul_ps(load(x + i, m), scale));
  }
  return _mm512_reduce_max_ps(best);
}

// e = exp(scale x - top) into `e` (fp32); returns their sum.
template <typename T>
VIT_AVX512 float exp_row(const T* x, float* e, int64_t n, __m512 scale, float top) {
  const __m512 shift = splat(top);
  __m512 sum = _mm512_setzero_ps();
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = lanes_left(n - i);
    const __m512 v = exp_nonpositive(_mm512_fmsub_ps(load(x + i, m), scale, shift));
    sum = _mm512_mask_add_ps(sum, m, sum, v);
    store(e + i, v, m);
  }
  return _mm512_reduce_add_ps(sum);
}

template <typename In, typename Out>
VIT_AVX512 void forward(const In* x, Out* y, int64_t rows, int64_t n, float scale) {
  const __m512 s = splat(scale);
  std::vector<float> e(static_cast<size_t>(n));
  for (int64_t r = 0; r < rows; ++r) {
    const In* row = x + r * n;
    const float total = exp_row(row, e.data(), n, s, row_max(row, n, s));
    const __m512 inverse = splat(1.0f / total);
    for (int64_t i = 0; i < n; i += 16) {
      const __mmask16 m = lanes_left(n - i);
      store(y + r * n + i, _mm512_mul_ps(load(e.data() + i, m), inverse), m);
    }
  }
}

template <typename G, typename Out>
VIT_AVX512 void backward(const G* dy, const G* y, Out* dx, int64_t rows, int64_t n, float scale) {
  for (int64_t r = 0; r < rows; ++r) {
    const G *g = dy + r * n, *p = y + r * n;
    __m512 dot = _mm512_setzero_ps();
    for (int64_t i = 0; i < n; i += 16) {
      const __mmask16 m = lanes_left(n - i);
      dot = _mm512_fmadd_ps(load(g + i, m), load(p + i, m), dot);  // masked lanes load 0
    }
    const __m512 centre = splat(_mm512_reduce_add_ps(dot));
    const __m512 s = splat(scale);
    for (int64_t i = 0; i < n; i += 16) {
      const __mmask16 m = lanes_left(n - i);
      const __m512 centred = _mm512_sub_ps(load(g + i, m), centre);
      store(dx + r * n + i, _mm512_mul_ps(_mm512_mul_ps(load(p + i, m), centred), s), m);
    }
  }
}

}  // namespace

void softmax_forward_avx512(const float* x, float* y, int64_t rows, int64_t n, float scale) {
  forward(x, y, rows, n, scale);
}

void softmax_forward_avx512(const float* x, c10::BFloat16* y, int64_t rows, int64_t n,
                            float scale) {
  forward(x, y, rows, n, scale);
}

void softmax_forward_avx512(const c10::BFloat16* x, float* y, int64_t rows, int64_t n,
                            float scale) {
  forward(x, y, rows, n, scale);
}

void softmax_forward_avx512(const c10::BFloat16* x, c10::BFloat16* y, int64_t rows, int64_t n,
                            float scale) {
  forward(x, y, rows, n, scale);
}

void softmax_backward_avx512(const float* dy, const float* y, float* dx, int64_t rows, int64_t n,
                             float scale) {
  backward(dy, y, dx, rows, n, scale);
}

void softmax_backward_avx512(const float* dy, const float* y, c10::BFloat16* dx, int64_t rows,
                             int64_t n, float scale) {
  backward(dy, y, dx, rows, n, scale);
}

void softmax_backward_avx512(const c10::BFloat16* dy, const c10::BFloat16* y, float* dx,
                             int64_t rows, int64_t n, float scale) {
  backward(dy, y, dx, rows, n, scale);
}

void softmax_backward_avx512(const c10::BFloat16* dy, const c10::BFloat16* y, c10::BFloat16* dx,
                             int64_t rows, int64_t n, float scale) {
  backward(dy, y, dx, rows, n, scale);
}

}  // namespace vit::detail
