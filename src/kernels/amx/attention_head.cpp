// The projection's bias is added as each head's rows are packed; the scores and
// probabilities stay in the thread's scratch, in cache, between the products. Each
// head writes only the part of the scratch its values fill, so the padding stays
// zero.
#include "attention_head.hpp"

#include <cstring>

#include "../simd/kernels.hpp"
#include "packing.hpp"
#include "tiles.hpp"

namespace vit::detail::amx {
namespace {

// dst's rows (dst_stride apart) = src's `rows` rows of `cols` values.
void copy_rows(const c10::BFloat16* src, int64_t src_stride, int64_t rows, int64_t cols,
               c10::BFloat16* dst, int64_t dst_stride) {
  for (int64_t r = 0; r < rows; ++r)
    std::memcpy(dst + r * dst_stride, src + r * src_stride, cols * sizeof(c10::BFloat16));
}

// x^T as A, `depth` deep (dst, rows `depth` values apart), x (rows x cols
// bf16, rows x_stride apart): x's rows paired, then the pairs transposed.
void transpose_as_a(const c10::BFloat16* x, int64_t x_stride, int64_t rows, int64_t cols,
                    int64_t depth, c10::BFloat16* paired, c10::BFloat16* dst) {
  pair_rows(x, x_stride, nullptr, rows, cols, depth, paired);
  transpose_pairs(paired, 2 * cols, nullptr, depth / 2, cols, dst, depth / 2);
}

int64_t steps(int64_t depth) {
  return depth / kTileDepth;
}

}  // namespace

HeadScratch::HeadScratch(const HeadShape& shape_)
    : shape(shape_),
      tiles((shape.tokens + kTileRows - 1) / kTileRows),
      depth(round_up(shape.tokens, kTileDepth)),
      rows_a(tiles * kTileRows * shape.head_dim),
      heads_b(shape.head_dim * tiles * kTileRows),
      probs_a(tiles * kTileRows * depth),
      paired(depth * tiles * kTileRows),
      keys_a(tiles * kTileRows * depth),
      tokens_b(depth * shape.head_dim),
      scores(tiles * tiles * kTileRows * kTileRows),
      products(tiles * kTileRows * shape.head_dim) {}

void head_forward(const HeadInputs& in, c10::BFloat16* probs, c10::BFloat16* out,
                  int64_t out_stride, HeadScratch& s) {
  const int64_t n = s.shape.tokens, d = s.shape.head_dim, columns = s.tiles * kTileRows;
  // s = q k^T
  biased_rows(in.q, in.stride, in.q_bias, n, d, s.rows_a.data());
  transpose_pairs(in.k, in.stride, in.k_bias, n, d / 2, s.heads_b.data(), columns);
  tile_product(s.rows_a.data(), d, s.heads_b.data(), columns, s.scores.data(), columns, s.tiles,
               s.tiles, steps(d));
  // p = softmax(scale s), bf16
  VIT_SIMD_DISPATCH(softmax_forward_strided(s.scores.data(), columns, s.probs_a.data(), s.depth, n,
                                            n, s.shape.scale));
  if (probs != nullptr) copy_rows(s.probs_a.data(), s.depth, n, n, probs, n);
  // out = p v
  pair_rows(in.v, in.stride, in.v_bias, n, d, s.depth, s.tokens_b.data());
  tile_product(s.probs_a.data(), s.depth, s.tokens_b.data(), d, s.products.data(), d, s.tiles,
               d / kTileColumns, steps(s.depth));
  narrow_rows(s.products.data(), d, n, d, out, out_stride, nullptr);
}

void head_backward(const c10::BFloat16* dout, int64_t dout_stride, const HeadInputs& in,
                   const c10::BFloat16* probs, const HeadGradients& g, HeadScratch& s) {
  const int64_t n = s.shape.tokens, d = s.shape.head_dim, columns = s.tiles * kTileRows;
  const int64_t head_tiles = d / kTileColumns;
  // dp = dout v^T
  copy_rows(dout, dout_stride, n, d, s.rows_a.data(), d);
  transpose_pairs(in.v, in.stride, in.v_bias, n, d / 2, s.heads_b.data(), columns);
  tile_product(s.rows_a.data(), d, s.heads_b.data(), columns, s.scores.data(), columns, s.tiles,
               s.tiles, steps(d));
  // ds = scale p (dp - sum(dp p)), bf16
  VIT_SIMD_DISPATCH(softmax_backward_strided(s.scores.data(), columns, probs, n, s.probs_a.data(),
                                             s.depth, n, n, s.shape.scale));
  // dv = p^T dout
  transpose_as_a(probs, n, n, n, s.depth, s.paired.data(), s.keys_a.data());
  pair_rows(s.rows_a.data(), d, nullptr, n, d, s.depth, s.tokens_b.data());
  tile_product(s.keys_a.data(), s.depth, s.tokens_b.data(), d, s.products.data(), d, s.tiles,
               head_tiles, steps(s.depth));
  narrow_rows(s.products.data(), d, n, d, g.dv, g.stride, g.dv_bias);
  // dk = ds^T q
  transpose_as_a(s.probs_a.data(), s.depth, n, n, s.depth, s.paired.data(), s.keys_a.data());
  pair_rows(in.q, in.stride, in.q_bias, n, d, s.depth, s.tokens_b.data());
  tile_product(s.keys_a.data(), s.depth, s.tokens_b.data(), d, s.products.data(), d, s.tiles,
               head_tiles, steps(s.depth));
  narrow_rows(s.products.data(), d, n, d, g.dk, g.stride, g.dk_bias);
  // dq = ds k
  pair_rows(in.k, in.stride, in.k_bias, n, d, s.depth, s.tokens_b.data());
  tile_product(s.probs_a.data(), s.depth, s.tokens_b.data(), d, s.products.data(), d, s.tiles,
               head_tiles, steps(s.depth));
  narrow_rows(s.products.data(), d, n, d, g.dq, g.stride, g.dq_bias);
}

}  // namespace vit::detail::amx
