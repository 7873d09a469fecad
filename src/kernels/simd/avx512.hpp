#pragma once
// 16 fp32 lanes in AVX-512 (F, BW, VL): the lane operations that the kernel
// bodies (kernels/simd/*.inc) are written in. Each function carries the
// target attribute, so this builds with the project's flags and runs only
// where simd_level() chose AVX-512. avx2.hpp has the same functions on 8 lanes.
#include <cstdint>

#include <immintrin.h>

#include <c10/util/BFloat16.h>

// GCC 12 warns that the `_mm512_undefined_*` pass-through operands inside
// several AVX-512 intrinsics (abs, roundscale, scalef, the narrowing
// conversion, the horizontal reductions) "may be" or "are" used
// uninitialized: a false positive of its headers.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

#define VIT_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl")))

namespace vit::detail::avx512 {

constexpr int64_t kLanes = 16;
using Vec = __m512;
using Mask = __mmask16;  // the lanes a load or store touches

VIT_AVX512 inline Vec splat(float v) {
  return _mm512_set1_ps(v);
}

VIT_AVX512 inline Vec zero() {
  return _mm512_setzero_ps();
}

// The first min(left, 16) lanes; none when left <= 0.
VIT_AVX512 inline Mask lanes_left(int64_t left) {
  if (left <= 0) return 0;
  return left >= kLanes ? Mask(0xFFFF) : Mask((1u << left) - 1u);
}

// Loads give 0 in the lanes outside the mask and never touch their memory.
VIT_AVX512 inline Vec load(const float* p, Mask m) {
  return _mm512_maskz_loadu_ps(m, p);
}

VIT_AVX512 inline Vec load(const c10::BFloat16* p, Mask m) {
  const __m256i half = _mm256_maskz_loadu_epi16(m, p);
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(half), 16));
}

VIT_AVX512 inline void store(float* p, Vec v, Mask m) {
  _mm512_mask_storeu_ps(p, m, v);
}

// Rounds to the nearest bf16, ties to even, and NaN to 0x7FC0: what
// c10::BFloat16's constructor does one value at a time.
VIT_AVX512 inline void store(c10::BFloat16* p, Vec v, Mask m) {
  const __m512i bits = _mm512_castps_si512(v);
  const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(bits, 16), _mm512_set1_epi32(1));
  __m512i rounded = _mm512_srli_epi32(
      _mm512_add_epi32(bits, _mm512_add_epi32(lsb, _mm512_set1_epi32(0x7FFF))), 16);
  const __mmask16 nan = _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
  rounded = _mm512_mask_mov_epi32(rounded, nan, _mm512_set1_epi32(0x7FC0));
  _mm256_mask_storeu_epi16(p, m, _mm512_cvtepi32_epi16(rounded));
}

VIT_AVX512 inline Vec add(Vec a, Vec b) {
  return _mm512_add_ps(a, b);
}
VIT_AVX512 inline Vec sub(Vec a, Vec b) {
  return _mm512_sub_ps(a, b);
}
VIT_AVX512 inline Vec mul(Vec a, Vec b) {
  return _mm512_mul_ps(a, b);
}
VIT_AVX512 inline Vec div(Vec a, Vec b) {
  return _mm512_div_ps(a, b);
}
VIT_AVX512 inline Vec fmadd(Vec a, Vec b, Vec c) {  // a b + c, rounded once
  return _mm512_fmadd_ps(a, b, c);
}
VIT_AVX512 inline Vec fnmadd(Vec a, Vec b, Vec c) {  // c - a b, rounded once
  return _mm512_fnmadd_ps(a, b, c);
}
VIT_AVX512 inline Vec fmsub(Vec a, Vec b, Vec c) {  // a b - c, rounded once
  return _mm512_fmsub_ps(a, b, c);
}
// b where either is NaN, as x86's max instructions do.
VIT_AVX512 inline Vec max(Vec a, Vec b) {
  return _mm512_max_ps(a, b);
}
VIT_AVX512 inline Vec abs(Vec a) {
  return _mm512_abs_ps(a);
}
VIT_AVX512 inline Vec round_to_integer(Vec a) {  // to nearest, ties to even
  return _mm512_roundscale_ps(a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
}

// a where the lane is in m, 0 elsewhere.
VIT_AVX512 inline Vec zero_outside(Mask m, Vec a) {
  return _mm512_maskz_mov_ps(m, a);
}
// max(a, b) in the lanes of m, a elsewhere.
VIT_AVX512 inline Vec max_within(Mask m, Vec a, Vec b) {
  return _mm512_mask_max_ps(a, m, a, b);
}
// a + b in the lanes of m, a elsewhere.
VIT_AVX512 inline Vec add_within(Mask m, Vec a, Vec b) {
  return _mm512_mask_add_ps(a, m, a, b);
}
// yes where x >= 0, no where x < 0 or NaN.
VIT_AVX512 inline Vec where_non_negative(Vec x, Vec yes, Vec no) {
  return _mm512_mask_mov_ps(no, _mm512_cmp_ps_mask(x, zero(), _CMP_GE_OQ), yes);
}

// p 2^n for integer-valued n, rounded once (to a subnormal, or 0, below
// float's range), as vscalefps computes it.
VIT_AVX512 inline Vec times_power_of_two(Vec p, Vec n) {
  return _mm512_scalef_ps(p, n);
}

VIT_AVX512 inline float reduce_add(Vec a) {
  return _mm512_reduce_add_ps(a);
}
VIT_AVX512 inline float reduce_max(Vec a) {
  return _mm512_reduce_max_ps(a);
}

}  // namespace vit::detail::avx512
