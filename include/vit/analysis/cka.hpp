#pragma once
// Linear centred kernel alignment (Kornblith et al., 2019) between every pair of
// layers, as Raghu et al. (2021) compare ViT layers:
//   CKA(X, Y) = ||Yc^T Xc||_F^2 / (||Xc^T Xc||_F ||Yc^T Yc||_F)
//             = <K, L>_F / (||K||_F ||L||_F),   K = Xc Xc^T, L = Yc Yc^T,
// with X (n, F) one layer's tokens flattened per image, Xc centred over the images.
// Shape key: L layers, n images, N tokens, D width.
#include <cstdint>
#include <vector>

#include <ATen/core/Tensor.h>

#include "vit/analysis/image_batches.hpp"
#include "vit/model/vision_transformer.hpp"

namespace vit {

// Xc Xc^T of `features` (n, ...) read as (n, F) and centred over the rows: float64
// (n, n). Throws vit::Error for fewer than two rows.
at::Tensor centred_gram(const at::Tensor& features);

// CKA of two centred Grams (n, n); 0 when either is all zeros. Throws vit::Error
// for shapes that differ.
double linear_cka(const at::Tensor& gram_x, const at::Tensor& gram_y);

// CKA of every pair: (rows.size(), columns.size()) float64.
at::Tensor cka_matrix(const std::vector<at::Tensor>& rows, const std::vector<at::Tensor>& columns);

// The centred Gram of every layer 0..L (L+1 of (n, n)), holding as many layers'
// features as fit in `budget_bytes` per pass over the images. Without gradients.
std::vector<at::Tensor> layer_grams(VisionTransformer& model, const ImageBatches& images,
                                    int64_t budget_bytes = int64_t{1} << 30);

}  // namespace vit
