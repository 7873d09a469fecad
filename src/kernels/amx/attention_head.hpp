#pragma once
// One attention head's softmax(scale q k^T) v, forward and backward, in bf16
// on AMX's tiles (tiles.hpp): the scores and probabilities stay in the
// thread's scratch, in cache, between the products. kernels/attention runs it
// for every (batch, head) of a LibTorch tensor.
#include <cstdint>
#include <vector>

#include <c10/util/BFloat16.h>

namespace vit::detail::amx {

struct HeadShape {
  int64_t queries = 0;   // rows of q
  int64_t keys = 0;      // rows of k and v
  int64_t head_dim = 0;  // their columns: a multiple of 32
  float scale = 1.0f;
};

// One thread's padded operands for heads of one shape, zeroed once: each head
// writes only the part its values fill, so the padding stays zero.
class HeadScratch {
 public:
  explicit HeadScratch(const HeadShape& shape);

  const HeadShape shape;
  const int64_t query_tiles, key_tiles;  // rows of queries and keys, in tiles of 16
  const int64_t query_depth, key_depth;  // queries and keys rounded up to 32, as a K dimension
  std::vector<c10::BFloat16> rows_a;     // q or dO as A: query_tiles*16 x head_dim
  std::vector<c10::BFloat16> heads_b;    // k^T or v^T as B: head_dim/2 x key_tiles*16 pairs
  std::vector<c10::BFloat16> probs_a;    // p or dS as A: query_tiles*16 x key_depth
  std::vector<c10::BFloat16> keys_a;     // p^T or dS^T as A: key_tiles*16 x query_depth
  std::vector<c10::BFloat16> tokens_b;   // v, dO, k or q as B: depth/2 x head_dim pairs
  std::vector<c10::BFloat16> paired;     // p or dS, rows paired: query_depth/2 x key_tiles*16 pairs
  std::vector<float> scores;             // s or dP: query_tiles*16 x key_tiles*16
  std::vector<float> products;           // o, dq, dk or dv: max tiles*16 x head_dim
};

// out (queries rows, out_stride apart) = softmax(scale q k^T) v, the
// probabilities also into probs (queries x keys) where it is not null. q, k
// and v row-major. Inside a TileScope.
void head_forward(const c10::BFloat16* q, const c10::BFloat16* k, const c10::BFloat16* v,
                  c10::BFloat16* probs, c10::BFloat16* out, int64_t out_stride,
                  HeadScratch& scratch);

// The gradients of q, k and v (row-major) from the output's, dout (rows
// dout_stride apart), and the forward's probabilities. Inside a TileScope.
void head_backward(const c10::BFloat16* dout, int64_t dout_stride, const c10::BFloat16* q,
                   const c10::BFloat16* k, const c10::BFloat16* v, const c10::BFloat16* probs,
                   c10::BFloat16* dq, c10::BFloat16* dk, c10::BFloat16* dv, HeadScratch& scratch);

}  // namespace vit::detail::amx
