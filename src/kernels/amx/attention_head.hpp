#pragma once
// One attention head's softmax(scale q k^T) v, forward and backward, in bf16 on AMX's
// tiles (tiles.hpp), read straight out of the fused qkv projection and its gradients
// written back into that layout. kernels/attention_from_projection runs it for every
// (batch, head).
#include <cstdint>
#include <vector>

#include <c10/util/BFloat16.h>

namespace vit::detail::amx {

struct HeadShape {
  int64_t tokens = 0;    // rows of q, k and v
  int64_t head_dim = 0;  // their columns: a multiple of 32
  float scale = 1.0f;
};

// One head's q, k and v: their first rows, `stride` values apart (the projection's
// width), and the bias for each (head_dim floats; all three null for none).
struct HeadInputs {
  const c10::BFloat16 *q, *k, *v;
  int64_t stride;
  const float *q_bias, *k_bias, *v_bias;
};

// Where the head's gradients go, rows `stride` apart; where not null, each one's
// columns summed over the rows (head_dim floats, written, not added to).
struct HeadGradients {
  c10::BFloat16 *dq, *dk, *dv;
  int64_t stride;
  float *dq_bias, *dk_bias, *dv_bias;
};

// One thread's padded operands for heads of one shape, zeroed once; the padding
// stays zero.
class HeadScratch {
 public:
  explicit HeadScratch(const HeadShape& shape);

  const HeadShape shape;
  const int64_t tiles;                  // the tokens in tiles of 16 rows
  const int64_t depth;                  // the tokens rounded up to 32, as a K dimension
  std::vector<c10::BFloat16> q, k, v;   // the head's rows, biased: tokens x head_dim
  std::vector<c10::BFloat16> rows_a;    // q or dO as A: tiles*16 x head_dim
  std::vector<c10::BFloat16> heads_b;   // k^T or v^T as B: head_dim/2 x tiles*16 pairs
  std::vector<c10::BFloat16> probs_a;   // p or dS as A: tiles*16 x depth
  std::vector<c10::BFloat16> paired;    // p or dS with rows paired: depth/2 x tiles*16 pairs
  std::vector<c10::BFloat16> keys_a;    // p^T or dS^T as A: tiles*16 x depth
  std::vector<c10::BFloat16> tokens_b;  // v, dO, q or k as B: depth/2 x head_dim pairs
  std::vector<float> scores;            // s or dP: tiles*16 x tiles*16
  std::vector<float> products;          // o, dv, dk or dq: tiles*16 x head_dim
};

// out (tokens rows, out_stride apart) = softmax(scale q k^T) v, the probabilities
// also into probs (tokens x tokens) where not null. Inside a TileScope.
void head_forward(const HeadInputs& in, c10::BFloat16* probs, c10::BFloat16* out,
                  int64_t out_stride, HeadScratch& scratch);

// The gradients of q, k and v from dout (rows dout_stride apart) and the forward's
// probabilities. Inside a TileScope.
void head_backward(const c10::BFloat16* dout, int64_t dout_stride, const HeadInputs& in,
                   const c10::BFloat16* probs, const HeadGradients& grads, HeadScratch& scratch);

}  // namespace vit::detail::amx
