#pragma once
// The picture of `vit pos-embed`, as in the ViT paper's Fig. 7 (centre): a
// g x g grid of tiles, one per patch, each a g x g map of that patch's
// position-embedding similarity with every patch, on one shared colour scale.
#include <string>

#include <ATen/core/Tensor.h>

namespace vit::io {

struct PosEmbedFigureOptions {
  std::string title = "Position embedding similarity";
  std::string caption;  // one or two lines under the tiles; "" = none
};

// `similarity` (g*g, g*g), row-major patches, values in [-1, 1] (cosines) ->
// uint8 RGB (3, H, W): tiles in viridis from -1 to 1 with gaps between them,
// tile rows and columns numbered from 1 ("input patch row" / "column"), a
// colour bar labelled "cosine similarity", the title and the caption. Throws
// vit::Error unless the matrix is square with a square side.
at::Tensor render_pos_embed_similarity(const at::Tensor& similarity,
                                       const PosEmbedFigureOptions& options = {});

}  // namespace vit::io
