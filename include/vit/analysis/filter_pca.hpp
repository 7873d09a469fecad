#pragma once
// Principal components of the patch-embedding filters (ViT paper, Fig. 7 left):
// PCA of the rows of patch_embed.proj.weight, each row one filter flattened
// like timm's weight (channel, then row, then column).
//
// Shape key: D width (filters), C channels, P patch side, F = C*P*P filter
//            length, k components kept.
#include <cstdint>

#include <ATen/core/Tensor.h>

namespace vit {

struct FilterPca {
  at::Tensor components;                // (k, F) float64, unit norm, by falling variance
  at::Tensor explained_variance;        // (k) float64: variance along each, over the D rows
  at::Tensor explained_variance_ratio;  // (k) float64: its share of the total variance
};

// PCA of `weight` (D, C, P, P) or (D, F), centred over the D rows (the mean
// filter is subtracted). k = min(count, D - 1, F): a centred D x F matrix has at
// most D - 1 directions of non-zero variance. A component's sign is arbitrary in
// PCA; here its largest-magnitude entry is made positive, so results repeat.
// Throws vit::Error for another shape, D < 2, or count < 1.
FilterPca filter_pca(const at::Tensor& weight, int64_t count);

}  // namespace vit
