#pragma once
// The picture of `vit filters`, as in the ViT paper's Fig. 7 (left): the
// principal components of the patch-embedding filters as small P x P images.
#include <cstdint>
#include <string>

#include <ATen/core/Tensor.h>

namespace vit::io {

// One component (C*P*P), flattened like timm's weight (channel, row, column) ->
// uint8 (C, P, P), stretched so its smallest entry is 0 and its largest 255
// (all equal: mid-gray). Each tile has its own scale, as in the paper: a
// component's sign and size mean nothing, its pattern does.
at::Tensor filter_tile(const at::Tensor& component, int64_t channels, int64_t patch_size);

struct FilterFigureOptions {
  int64_t columns = 7;
  std::string title = "Principal components of the patch-embedding filters";
  std::string footer;  // a caption under the tiles; "" = none
};

// `components` (k, C*P*P) and `explained_variance_ratio` (k) -> a grid of the
// k tiles, each enlarged (nearest, so pixels stay squares) and captioned
// "PC i" and its share of the variance. uint8 RGB (3, H, W). Throws vit::Error
// when the shapes do not agree.
at::Tensor render_filters(const at::Tensor& components, const at::Tensor& explained_variance_ratio,
                          int64_t channels, int64_t patch_size,
                          const FilterFigureOptions& options = {});

}  // namespace vit::io
