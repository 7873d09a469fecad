// Run only where the tiles are usable, so on CPUs that have AVX-512 BW and
// AVX512_BF16 too. Rounding is vcvtneps2bf16's; a biased pack rounds as
// kernels/head_split writes, but for subnormal sums.
#include "packing.hpp"

#include <immintrin.h>

// GCC 12's false positive on its AVX-512 headers (see simd/avx512.hpp).
#ifndef __clang__  // clang has no such group, and warns of it
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#pragma GCC diagnostic ignored "-Wuninitialized"

#define VIT_AMX_PACKING __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16")))

namespace vit::detail::amx {
namespace {

// The first n of 16 lanes; none for n <= 0 (the upper half of a block when
// fewer than 16 values are left).
VIT_AMX_PACKING inline __mmask16 first_lanes(int64_t n) {
  if (n <= 0) return __mmask16(0);
  return n >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << n) - 1u);
}

// Transposes a 16 x 16 block of 32-bit words held as 16 rows.
VIT_AMX_PACKING void transpose_block(__m512i r[16]) {
  __m512i t[16], u[16], v[16];
  for (int i = 0; i < 16; i += 2) {
    t[i] = _mm512_unpacklo_epi32(r[i], r[i + 1]);
    t[i + 1] = _mm512_unpackhi_epi32(r[i], r[i + 1]);
  }
  // u[4g + s]: within each 128-bit lane k, column 4k + s of rows 4g..4g+3.
  for (int g = 0; g < 16; g += 4) {
    u[g] = _mm512_unpacklo_epi64(t[g], t[g + 2]);
    u[g + 1] = _mm512_unpackhi_epi64(t[g], t[g + 2]);
    u[g + 2] = _mm512_unpacklo_epi64(t[g + 1], t[g + 3]);
    u[g + 3] = _mm512_unpackhi_epi64(t[g + 1], t[g + 3]);
  }
  for (int s = 0; s < 4; ++s) {
    v[s] = _mm512_shuffle_i32x4(u[s], u[4 + s], 0x88);      // lanes 0 and 2, rows 0-7
    v[4 + s] = _mm512_shuffle_i32x4(u[s], u[4 + s], 0xDD);  // lanes 1 and 3
    v[8 + s] = _mm512_shuffle_i32x4(u[8 + s], u[12 + s], 0x88);
    v[12 + s] = _mm512_shuffle_i32x4(u[8 + s], u[12 + s], 0xDD);
  }
  for (int s = 0; s < 4; ++s) {
    r[s] = _mm512_shuffle_i32x4(v[s], v[8 + s], 0x88);           // column s
    r[8 + s] = _mm512_shuffle_i32x4(v[s], v[8 + s], 0xDD);       // column 8 + s
    r[4 + s] = _mm512_shuffle_i32x4(v[4 + s], v[12 + s], 0x88);  // column 4 + s
    r[12 + s] = _mm512_shuffle_i32x4(v[4 + s], v[12 + s], 0xDD);
  }
}

// 16 bf16 values of x (those in m, zeros elsewhere), plus the bias's where
// it is not null, rounded by vcvtneps2bf16.
VIT_AMX_PACKING inline __m256i load_biased(const c10::BFloat16* x, const float* bias, __mmask16 m) {
  const __m256i raw = _mm256_maskz_loadu_epi16(m, x);
  if (bias == nullptr) return raw;
  const __m512 wide = _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(raw), 16));
  return (__m256i)_mm512_cvtneps_pbh(_mm512_add_ps(wide, _mm512_maskz_loadu_ps(m, bias)));
}

}  // namespace

VIT_AMX_PACKING void transpose_pairs(const c10::BFloat16* x, int64_t x_stride, const float* bias,
                                     int64_t rows, int64_t pairs, c10::BFloat16* dst,
                                     int64_t dst_stride) {
  __m512i block[16];
  auto* out = reinterpret_cast<uint32_t*>(dst);
  for (int64_t r0 = 0; r0 < rows; r0 += 16) {
    for (int64_t c0 = 0; c0 < pairs; c0 += 16) {
      const int64_t values_left = 2 * (pairs - c0);
      const __mmask16 low = first_lanes(values_left), high = first_lanes(values_left - 16);
      const float* b = bias == nullptr ? nullptr : bias + 2 * c0;
      for (int64_t i = 0; i < 16; ++i) {
        if (r0 + i >= rows) {
          block[i] = _mm512_setzero_si512();
          continue;
        }
        const c10::BFloat16* row = x + (r0 + i) * x_stride + 2 * c0;
        block[i] = _mm512_inserti64x4(_mm512_castsi256_si512(load_biased(row, b, low)),
                                      load_biased(row + 16, b == nullptr ? b : b + 16, high), 1);
      }
      transpose_block(block);
      for (int64_t j = 0; j < 16 && c0 + j < pairs; ++j)
        _mm512_storeu_si512(out + (c0 + j) * dst_stride + r0, block[j]);
    }
  }
}

VIT_AMX_PACKING void pair_rows(const c10::BFloat16* x, int64_t x_stride, const float* bias,
                               int64_t rows, int64_t cols, int64_t depth, c10::BFloat16* dst) {
  auto* out = reinterpret_cast<uint32_t*>(dst);
  for (int64_t p = 0; p < depth / 2; ++p) {
    const bool has_even = 2 * p < rows, has_odd = 2 * p + 1 < rows;
    for (int64_t c = 0; c < cols; c += 16) {
      const __mmask16 m = first_lanes(cols - c);
      const float* b = bias == nullptr ? nullptr : bias + c;
      const __m512i even = has_even
                               ? _mm512_cvtepu16_epi32(load_biased(x + 2 * p * x_stride + c, b, m))
                               : _mm512_setzero_si512();
      const __m512i odd =
          has_odd ? _mm512_cvtepu16_epi32(load_biased(x + (2 * p + 1) * x_stride + c, b, m))
                  : _mm512_setzero_si512();
      _mm512_mask_storeu_epi32(out + p * cols + c, m,
                               _mm512_or_si512(even, _mm512_slli_epi32(odd, 16)));
    }
  }
}

VIT_AMX_PACKING void biased_rows(const c10::BFloat16* x, int64_t x_stride, const float* bias,
                                 int64_t rows, int64_t cols, c10::BFloat16* dst) {
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; c += 16) {
      const __mmask16 m = first_lanes(cols - c);
      _mm256_mask_storeu_epi16(
          dst + r * cols + c, m,
          load_biased(x + r * x_stride + c, bias == nullptr ? bias : bias + c, m));
    }
}

VIT_AMX_PACKING void narrow_rows(const float* x, int64_t x_stride, int64_t rows, int64_t cols,
                                 c10::BFloat16* dst, int64_t dst_stride, float* sums) {
  for (int64_t i = 0; i < cols; i += 16) {
    const __mmask16 m = first_lanes(cols - i);
    __m512 sum = _mm512_setzero_ps();
    for (int64_t r = 0; r < rows; ++r) {
      const __m256i narrow =
          (__m256i)_mm512_cvtneps_pbh(_mm512_maskz_loadu_ps(m, x + r * x_stride + i));
      _mm256_mask_storeu_epi16(dst + r * dst_stride + i, m, narrow);
      sum = _mm512_add_ps(
          sum, _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(narrow), 16)));
    }
    if (sums != nullptr) _mm512_mask_storeu_ps(sums + i, m, sum);
  }
}

}  // namespace vit::detail::amx
