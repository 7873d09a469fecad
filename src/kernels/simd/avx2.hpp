#pragma once
// 8 fp32 lanes in AVX2 and FMA: avx512.hpp's functions, the same lane by lane, for
// CPUs without AVX-512 (AMD Zen 2 and 3, Intel's client cores). AVX2 masks 32-bit
// lanes only, so a mask also knows its lane count: full vectors take plain loads and
// stores, and a row's bf16 tail goes through a small buffer.
#include <cstdint>
#include <cstring>

#include <immintrin.h>

#include <c10/util/BFloat16.h>

#define VIT_AVX2 __attribute__((target("avx2,fma")))

namespace vit::detail::avx2 {

constexpr int64_t kLanes = 8;
using Vec = __m256;
struct Mask {
  __m256i bits;   // all ones in the lanes a load or store touches
  int64_t count;  // how many: the first `count` lanes, 0..8
};

VIT_AVX2 inline Vec splat(float v) {
  return _mm256_set1_ps(v);
}

VIT_AVX2 inline Vec zero() {
  return _mm256_setzero_ps();
}

// The first min(left, 8) lanes; none when left <= 0.
VIT_AVX2 inline Mask lanes_left(int64_t left) {
  const int64_t count = left <= 0 ? 0 : (left >= kLanes ? kLanes : left);
  const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  return {_mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(count)), lane), count};
}

// Loads give 0 in the lanes outside the mask and never touch their memory
// (vmaskmovps does not fault on masked-off lanes).
VIT_AVX2 inline Vec load(const float* p, Mask m) {
  return m.count == kLanes ? _mm256_loadu_ps(p) : _mm256_maskload_ps(p, m.bits);
}

VIT_AVX2 inline Vec widen(__m128i bf16) {
  return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(bf16), 16));
}

VIT_AVX2 inline Vec load(const c10::BFloat16* p, Mask m) {
  if (m.count == kLanes) return widen(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  uint16_t tail[kLanes] = {};
  std::memcpy(tail, p, static_cast<size_t>(m.count) * sizeof(uint16_t));
  return widen(_mm_loadu_si128(reinterpret_cast<const __m128i*>(tail)));
}

VIT_AVX2 inline void store(float* p, Vec v, Mask m) {
  if (m.count == kLanes)
    _mm256_storeu_ps(p, v);
  else
    _mm256_maskstore_ps(p, m.bits, v);
}

// Rounds to the nearest bf16, ties to even, and NaN to 0x7FC0: what
// c10::BFloat16's constructor does one value at a time.
VIT_AVX2 inline void store(c10::BFloat16* p, Vec v, Mask m) {
  const __m256i bits = _mm256_castps_si256(v);
  const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(bits, 16), _mm256_set1_epi32(1));
  const __m256i rounded = _mm256_srli_epi32(
      _mm256_add_epi32(bits, _mm256_add_epi32(lsb, _mm256_set1_epi32(0x7FFF))), 16);
  const __m256 nan = _mm256_cmp_ps(v, v, _CMP_UNORD_Q);
  const __m256i halves = _mm256_castps_si256(_mm256_blendv_ps(
      _mm256_castsi256_ps(rounded), _mm256_castsi256_ps(_mm256_set1_epi32(0x7FC0)), nan));
  // packus works within each 128-bit half: (r0..r3 r0..r3 | r4..r7 r4..r7);
  // the permute brings r4..r7 next to r0..r3.
  const __m128i packed = _mm256_castsi256_si128(
      _mm256_permute4x64_epi64(_mm256_packus_epi32(halves, halves), /*q0, q2=*/0x08));
  if (m.count == kLanes) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(p), packed);
    return;
  }
  uint16_t tail[kLanes];
  _mm_storeu_si128(reinterpret_cast<__m128i*>(tail), packed);
  std::memcpy(p, tail, static_cast<size_t>(m.count) * sizeof(uint16_t));
}

VIT_AVX2 inline Vec add(Vec a, Vec b) {
  return _mm256_add_ps(a, b);
}
VIT_AVX2 inline Vec sub(Vec a, Vec b) {
  return _mm256_sub_ps(a, b);
}
VIT_AVX2 inline Vec mul(Vec a, Vec b) {
  return _mm256_mul_ps(a, b);
}
VIT_AVX2 inline Vec div(Vec a, Vec b) {
  return _mm256_div_ps(a, b);
}
VIT_AVX2 inline Vec sqrt(Vec a) {  // correctly rounded
  return _mm256_sqrt_ps(a);
}
VIT_AVX2 inline Vec fmadd(Vec a, Vec b, Vec c) {  // a b + c, rounded once
  return _mm256_fmadd_ps(a, b, c);
}
VIT_AVX2 inline Vec fnmadd(Vec a, Vec b, Vec c) {  // c - a b, rounded once
  return _mm256_fnmadd_ps(a, b, c);
}
VIT_AVX2 inline Vec fmsub(Vec a, Vec b, Vec c) {  // a b - c, rounded once
  return _mm256_fmsub_ps(a, b, c);
}
// b where either is NaN, as x86's max instructions do.
VIT_AVX2 inline Vec max(Vec a, Vec b) {
  return _mm256_max_ps(a, b);
}
VIT_AVX2 inline Vec abs(Vec a) {
  return _mm256_and_ps(a, _mm256_castsi256_ps(_mm256_set1_epi32(0x7FFFFFFF)));
}
VIT_AVX2 inline Vec round_to_integer(Vec a) {  // to nearest, ties to even
  return _mm256_round_ps(a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
}

// a where the lane is in m, 0 elsewhere.
VIT_AVX2 inline Vec zero_outside(Mask m, Vec a) {
  return _mm256_and_ps(a, _mm256_castsi256_ps(m.bits));
}
// max(a, b) in the lanes of m, a elsewhere.
VIT_AVX2 inline Vec max_within(Mask m, Vec a, Vec b) {
  return _mm256_blendv_ps(a, _mm256_max_ps(a, b), _mm256_castsi256_ps(m.bits));
}
// a + b in the lanes of m, a elsewhere.
VIT_AVX2 inline Vec add_within(Mask m, Vec a, Vec b) {
  return _mm256_blendv_ps(a, _mm256_add_ps(a, b), _mm256_castsi256_ps(m.bits));
}
// yes where x >= 0, no where x < 0 or NaN.
VIT_AVX2 inline Vec where_non_negative(Vec x, Vec yes, Vec no) {
  return _mm256_blendv_ps(no, yes, _mm256_cmp_ps(x, zero(), _CMP_GE_OQ));
}

// 2^e for integer e in [-126, 127], built from its exponent bits.
VIT_AVX2 inline Vec power_of_two(__m256i e) {
  return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(e, _mm256_set1_epi32(127)), 23));
}

// p 2^n, rounded once as vscalefps rounds it, for |p| in [0.5, 2] and
// integer-valued n in [-252, 254] (what exp_nonpositive passes): 2^n as two
// powers of two, each a normal float, so that the first product is exact and
// the second rounds (to a subnormal, or 0, below float's range).
VIT_AVX2 inline Vec times_power_of_two(Vec p, Vec n) {
  const __m256i k = _mm256_cvtps_epi32(n);
  const __m256i half = _mm256_srai_epi32(k, 1), rest = _mm256_sub_epi32(k, half);
  return _mm256_mul_ps(_mm256_mul_ps(p, power_of_two(half)), power_of_two(rest));
}

VIT_AVX2 inline float reduce_add(Vec a) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  return _mm_cvtss_f32(_mm_add_ss(s, _mm_movehdup_ps(s)));
}
VIT_AVX2 inline float reduce_max(Vec a) {
  __m128 s = _mm_max_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
  s = _mm_max_ps(s, _mm_movehl_ps(s, s));
  return _mm_cvtss_f32(_mm_max_ss(s, _mm_movehdup_ps(s)));
}

}  // namespace vit::detail::avx2
