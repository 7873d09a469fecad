#pragma once
// Position-embedding similarity (ViT paper, Fig. 7 centre): the cosine
// similarity of each patch's position embedding with every other patch's.
//
// Shape key: g grid side, P = g*g patches (row-major: patch (r, c) is r*g + c),
//            D width.
#include <ATen/core/Tensor.h>

namespace vit {

// pos_embed (1, F + P, D), the class token's row first where F = 1 (F = 0 for
// timm's register models) -> (P, P) cosine similarities of the patch tokens'
// embeddings, the class token left out; float64 for float64 input, else
// float32; on the CPU. An all-zero embedding has similarity 0 with
// everything. Throws vit::Error for a shape pos_embed_grid rejects.
at::Tensor pos_embed_similarity(const at::Tensor& pos_embed, int64_t prefix_rows = 1);

}  // namespace vit
