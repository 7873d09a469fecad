#pragma once
// 16 fp32 lanes in AVX-512: the lane operations the kernel bodies
// (kernels/simd/*.inc) are written in, in two sets: avx512 (F, BW and VL, every
// AVX-512 CPU), and avx512_bf16 (with DQ and AVX512_BF16: the narrowing store to
// bf16 is one vcvtneps2bf16). Each function has its set's target attribute, so this
// builds with the project's flags and runs only where simd_level() chose that set.
// avx2.hpp has the same functions on 8 lanes.
#include <cstdint>

#include <immintrin.h>

#include <c10/util/BFloat16.h>

// GCC 12 warns that the `_mm512_undefined_*` pass-through operands inside
// several AVX-512 intrinsics (abs, roundscale, scalef, the narrowing
// conversion, the horizontal reductions) "may be" or "are" used
// uninitialized: a false positive of its headers.
#ifndef __clang__  // clang has no such group, and warns of it
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#pragma GCC diagnostic ignored "-Wuninitialized"

#define VIT_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl")))
#define VIT_AVX512_BF16 __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512bf16")))

namespace vit::detail::avx512 {

#define VIT_LANES VIT_AVX512
#include "avx512_lanes.inc"
#undef VIT_LANES

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

}  // namespace vit::detail::avx512

namespace vit::detail::avx512_bf16 {

#define VIT_LANES VIT_AVX512_BF16
#include "avx512_lanes.inc"
#undef VIT_LANES

// Rounds to the nearest bf16, ties to even, and NaN to 0x7FC0, as
// avx512::store and c10::BFloat16's constructor do, in one vcvtneps2bf16.
// That instruction treats subnormal floats (below 1.2e-38) as zero and keeps
// a NaN's payload, so a vector holding either, which training almost never
// meets, takes avx512::store instead: one vfpclassps and a branch that is
// always predicted.
VIT_AVX512_BF16 inline void store(c10::BFloat16* p, Vec v, Mask m) {
  constexpr int kNanOrSubnormal = 0x01 | 0x20 | 0x80;  // quiet NaN, subnormal, signalling NaN
  if (__builtin_expect(_mm512_mask_fpclass_ps_mask(m, v, kNanOrSubnormal) != 0, 0))
    return avx512::store(p, v, m);
  _mm256_mask_storeu_epi16(p, m, reinterpret_cast<__m256i>(_mm512_cvtneps_pbh(v)));
}

}  // namespace vit::detail::avx512_bf16
