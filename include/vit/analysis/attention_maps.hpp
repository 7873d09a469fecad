#pragma once
// Raw attention of one query, per layer and head: what `vit attention` draws.
//
// Shape key: L layers, B batch, H heads, N = F + g*g tokens (F prefix tokens:
//            the class token, then the registers; then the patches in row-major
//            order: patch (i, j) is token F + i*g + j).
#include <cstdint>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

namespace vit {

// Whose attention row is drawn.
struct AttentionQuery {
  enum class Kind { kClassToken, kPatchMean, kPatch };
  Kind kind = Kind::kClassToken;
  int64_t row = 0, column = 0;  // the patch, for kPatch; counted from 0
};

// "i,j" (row i, column j, from 0) -> a kPatch query. Throws vit::Error naming
// the text unless it is two whole numbers >= 0 separated by a comma.
AttentionQuery parse_attention_query(const std::string& text);

// "class_token", "patch_mean", or [i, j] written "i,j".
std::string attention_query_name(const AttentionQuery& query);

// The query's row of every layer's attention, patch columns only, not
// renormalised -> (B, L, H, g, g); for kPatchMean the mean of the patch rows.
// float64 for float64 input, else float32, on the CPU. Throws vit::Error for
// shapes check_attention_shapes rejects, or a patch outside the g x g grid.
at::Tensor attention_query_maps(const std::vector<at::Tensor>& attentions,
                                const AttentionQuery& query, int64_t prefix_tokens = 1);

}  // namespace vit
