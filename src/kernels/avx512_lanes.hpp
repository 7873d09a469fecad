#pragma once
// Loading and storing 16 fp32 lanes from fp32 or bf16 memory, for the
// AVX-512 kernels of kernels/ (gelu_avx512, layer_norm_avx512). Each function
// carries the target attribute, so the files build with the project's flags
// and the code runs only where avx512_supported() said yes.
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

namespace vit::detail {

// AVX-512 F, BW and VL: what the kernels of kernels/ need.
inline bool avx512_supported() {
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512vl");
}

VIT_AVX512 inline __m512 splat(float v) {
  return _mm512_set1_ps(v);
}

// The first min(left, 16) lanes; none when left <= 0.
VIT_AVX512 inline __mmask16 lanes_left(int64_t left) {
  if (left <= 0) return 0;
  return left >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << left) - 1u);
}

VIT_AVX512 inline __m512 load(const float* p, __mmask16 m) {
  return _mm512_maskz_loadu_ps(m, p);
}

VIT_AVX512 inline __m512 load(const c10::BFloat16* p, __mmask16 m) {
  const __m256i half = _mm256_maskz_loadu_epi16(m, p);
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(half), 16));
}

VIT_AVX512 inline void store(float* p, __m512 v, __mmask16 m) {
  _mm512_mask_storeu_ps(p, m, v);
}

// Rounds to the nearest bf16, ties to even, and NaN to 0x7FC0: what
// c10::BFloat16's constructor does one value at a time.
VIT_AVX512 inline void store(c10::BFloat16* p, __m512 v, __mmask16 m) {
  const __m512i bits = _mm512_castps_si512(v);
  const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(bits, 16), _mm512_set1_epi32(1));
  __m512i rounded = _mm512_srli_epi32(
      _mm512_add_epi32(bits, _mm512_add_epi32(lsb, _mm512_set1_epi32(0x7FFF))), 16);
  const __mmask16 nan = _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
  rounded = _mm512_mask_mov_epi32(rounded, nan, _mm512_set1_epi32(0x7FC0));
  _mm256_mask_storeu_epi16(p, m, _mm512_cvtepi32_epi16(rounded));
}

}  // namespace vit::detail
