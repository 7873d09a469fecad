#include "attention_head.hpp"

#include <algorithm>
#include <cstring>

#include <immintrin.h>

#include "../simd/kernels.hpp"
#include "tiles.hpp"

// GCC 12's false positive on its AVX-512 headers (see simd/avx512.hpp).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

namespace vit::detail::amx {
namespace {

// The packing below runs only beside AMX's tiles, so on CPUs that have
// AVX-512 (F, BW) and AVX512_BF16 too.
#define VIT_AMX_PACKING __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16")))

VIT_AMX_PACKING inline __mmask16 first_lanes(int64_t n) {
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

// dst[c][r] = x[r][c] over 32-bit words, x (rows x cols, rows x_stride
// words apart), dst's rows dst_stride words apart; rows past x's end, up to
// the next multiple of 16, give zeros.
VIT_AMX_PACKING void transpose_words(const uint32_t* x, int64_t rows, int64_t cols,
                                     int64_t x_stride, uint32_t* dst, int64_t dst_stride) {
  __m512i block[16];
  for (int64_t r0 = 0; r0 < rows; r0 += 16) {
    for (int64_t c0 = 0; c0 < cols; c0 += 16) {
      const __mmask16 columns = first_lanes(cols - c0);
      for (int64_t i = 0; i < 16; ++i)
        block[i] = r0 + i < rows ? _mm512_maskz_loadu_epi32(columns, x + (r0 + i) * x_stride + c0)
                                 : _mm512_setzero_si512();
      transpose_block(block);
      for (int64_t j = 0; j < 16 && c0 + j < cols; ++j)
        _mm512_storeu_si512(dst + (c0 + j) * dst_stride + r0, block[j]);
    }
  }
}

// x (rows x cols bf16, rows x_stride apart) as B with K along its rows,
// `depth` deep: dst's row p holds the pairs (x[2p][c], x[2p+1][c]) for every
// c, and zeros past x's last row (the scratch holds operands of other depths
// too).
VIT_AMX_PACKING void pair_rows(const c10::BFloat16* x, int64_t x_stride, int64_t rows, int64_t cols,
                               int64_t depth, c10::BFloat16* dst) {
  const auto* in = reinterpret_cast<const uint16_t*>(x);
  auto* out = reinterpret_cast<uint32_t*>(dst);
  for (int64_t p = 0; p < depth / 2; ++p) {
    const bool has_even = 2 * p < rows, has_odd = 2 * p + 1 < rows;
    for (int64_t c = 0; c < cols; c += 16) {
      const __mmask16 m = first_lanes(cols - c);
      const __m512i even =
          has_even ? _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, in + 2 * p * x_stride + c))
                   : _mm512_setzero_si512();
      const __m512i odd =
          has_odd
              ? _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, in + (2 * p + 1) * x_stride + c))
              : _mm512_setzero_si512();
      _mm512_mask_storeu_epi32(out + p * cols + c, m,
                               _mm512_or_si512(even, _mm512_slli_epi32(odd, 16)));
    }
  }
}

// dst's `rows` rows (dst_stride apart) = src's (rows src_stride apart) of n
// values, rounded to bf16 by vcvtneps2bf16: to nearest, ties to even, with
// subnormal inputs and results taken as 0.
VIT_AMX_PACKING void narrow_rows(const float* src, int64_t src_stride, int64_t rows, int64_t n,
                                 c10::BFloat16* dst, int64_t dst_stride) {
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t i = 0; i < n; i += 16) {
      const __mmask16 m = first_lanes(n - i);
      const __m256bh narrow =
          _mm512_cvtneps_pbh(_mm512_maskz_loadu_ps(m, src + r * src_stride + i));
      _mm256_mask_storeu_epi16(dst + r * dst_stride + i, m,
                               reinterpret_cast<const __m256i&>(narrow));
    }
}

// dst's rows (dst_stride apart) = src's `rows` rows of `cols` values.
void copy_rows(const c10::BFloat16* src, int64_t src_stride, int64_t rows, int64_t cols,
               c10::BFloat16* dst, int64_t dst_stride) {
  for (int64_t r = 0; r < rows; ++r)
    std::memcpy(dst + r * dst_stride, src + r * src_stride, cols * sizeof(c10::BFloat16));
}

// x^T as B, x (rows x cols, row-major, cols even) with K along its columns:
// dst's row p holds the pairs (x[n][2p], x[n][2p+1]) for every row n, rows
// dst_pairs pairs apart: x's 32-bit words, transposed.
void pair_columns(const c10::BFloat16* x, int64_t rows, int64_t cols, c10::BFloat16* dst,
                  int64_t dst_pairs) {
  transpose_words(reinterpret_cast<const uint32_t*>(x), rows, cols / 2, cols / 2,
                  reinterpret_cast<uint32_t*>(dst), dst_pairs);
}

// x^T as A, `depth` deep (dst, rows dst_stride values apart), x (rows x
// cols bf16, rows x_stride apart): x's rows paired, then the pairs
// transposed as words.
void transpose_as_a(const c10::BFloat16* x, int64_t x_stride, int64_t rows, int64_t cols,
                    int64_t depth, c10::BFloat16* paired, c10::BFloat16* dst, int64_t dst_stride) {
  pair_rows(x, x_stride, rows, cols, depth, paired);
  transpose_words(reinterpret_cast<const uint32_t*>(paired), depth / 2, cols, cols,
                  reinterpret_cast<uint32_t*>(dst), dst_stride / 2);
}

// dst's `rows` rows (dst_stride apart) = the first rows of products, in bf16.
void narrow_products(const HeadScratch& s, int64_t rows, c10::BFloat16* dst, int64_t dst_stride) {
  narrow_rows(s.products.data(), s.shape.head_dim, rows, s.shape.head_dim, dst, dst_stride);
}

int64_t steps(int64_t depth) {
  return depth / kTileDepth;
}

}  // namespace

HeadScratch::HeadScratch(const HeadShape& shape_)
    : shape(shape_),
      query_tiles((shape.queries + kTileRows - 1) / kTileRows),
      key_tiles((shape.keys + kTileRows - 1) / kTileRows),
      query_depth(round_up(shape.queries, kTileDepth)),
      key_depth(round_up(shape.keys, kTileDepth)),
      rows_a(query_tiles * kTileRows * shape.head_dim),
      heads_b(shape.head_dim * key_tiles * kTileRows),
      probs_a(query_tiles * kTileRows * key_depth),
      keys_a(key_tiles * kTileRows * query_depth),
      tokens_b(std::max(query_depth, key_depth) * shape.head_dim),
      paired(query_depth * key_tiles * kTileRows),
      scores(query_tiles * key_tiles * kTileRows * kTileRows),
      products(std::max(query_tiles, key_tiles) * kTileRows * shape.head_dim) {}

void head_forward(const c10::BFloat16* q, const c10::BFloat16* k, const c10::BFloat16* v,
                  c10::BFloat16* probs, c10::BFloat16* out, int64_t out_stride, HeadScratch& s) {
  const HeadShape& shape = s.shape;
  const int64_t d = shape.head_dim, key_columns = s.key_tiles * kTileRows;
  // s = q k^T
  copy_rows(q, d, shape.queries, d, s.rows_a.data(), d);
  pair_columns(k, shape.keys, d, s.heads_b.data(), key_columns);
  tile_product(s.rows_a.data(), d, s.heads_b.data(), key_columns, s.scores.data(), key_columns,
               s.query_tiles, s.key_tiles, steps(d));
  // p = softmax(scale s), bf16
  VIT_SIMD_DISPATCH(softmax_forward_strided(s.scores.data(), key_columns, s.probs_a.data(),
                                            s.key_depth, shape.queries, shape.keys, shape.scale));
  if (probs != nullptr)
    copy_rows(s.probs_a.data(), s.key_depth, shape.queries, shape.keys, probs, shape.keys);
  // out = p v
  pair_rows(v, d, shape.keys, d, s.key_depth, s.tokens_b.data());
  tile_product(s.probs_a.data(), s.key_depth, s.tokens_b.data(), d, s.products.data(), d,
               s.query_tiles, d / kTileColumns, steps(s.key_depth));
  narrow_products(s, shape.queries, out, out_stride);
}

void head_backward(const c10::BFloat16* dout, int64_t dout_stride, const c10::BFloat16* q,
                   const c10::BFloat16* k, const c10::BFloat16* v, const c10::BFloat16* probs,
                   c10::BFloat16* dq, c10::BFloat16* dk, c10::BFloat16* dv, HeadScratch& s) {
  const HeadShape& shape = s.shape;
  const int64_t d = shape.head_dim, key_columns = s.key_tiles * kTileRows;
  const int64_t head_tiles = d / kTileColumns;
  // dp = dout v^T
  copy_rows(dout, dout_stride, shape.queries, d, s.rows_a.data(), d);
  pair_columns(v, shape.keys, d, s.heads_b.data(), key_columns);
  tile_product(s.rows_a.data(), d, s.heads_b.data(), key_columns, s.scores.data(), key_columns,
               s.query_tiles, s.key_tiles, steps(d));
  // ds = scale p (dp - sum(dp p)), bf16, and its transpose
  VIT_SIMD_DISPATCH(softmax_backward_strided(s.scores.data(), key_columns, probs, shape.keys,
                                             s.probs_a.data(), s.key_depth, shape.queries,
                                             shape.keys, shape.scale));
  // dv = p^T dout
  transpose_as_a(probs, shape.keys, shape.queries, shape.keys, s.query_depth, s.paired.data(),
                 s.keys_a.data(), s.query_depth);
  pair_rows(s.rows_a.data(), d, shape.queries, d, s.query_depth, s.tokens_b.data());
  tile_product(s.keys_a.data(), s.query_depth, s.tokens_b.data(), d, s.products.data(), d,
               s.key_tiles, head_tiles, steps(s.query_depth));
  narrow_products(s, shape.keys, dv, d);
  // dk = ds^T q
  transpose_as_a(s.probs_a.data(), s.key_depth, shape.queries, shape.keys, s.query_depth,
                 s.paired.data(), s.keys_a.data(), s.query_depth);
  pair_rows(q, d, shape.queries, d, s.query_depth, s.tokens_b.data());
  tile_product(s.keys_a.data(), s.query_depth, s.tokens_b.data(), d, s.products.data(), d,
               s.key_tiles, head_tiles, steps(s.query_depth));
  narrow_products(s, shape.keys, dk, d);
  // dq = ds k
  pair_rows(k, d, shape.keys, d, s.key_depth, s.tokens_b.data());
  tile_product(s.probs_a.data(), s.key_depth, s.tokens_b.data(), d, s.products.data(), d,
               s.query_tiles, head_tiles, steps(s.key_depth));
  narrow_products(s, shape.queries, dq, d);
}

}  // namespace vit::detail::amx
