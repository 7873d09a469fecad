#pragma once
// What a sparse autoencoder's features respond to: how often each fires on a
// layer's patch tokens, and the images on which it fires most, each with the
// patch where it does (`vit sae features`).
//
// Shape key: F features, M examples a feature, B images, P patches.
#include <cstdint>
#include <vector>

#include <ATen/core/Tensor.h>

#include "vit/analysis/image_batches.hpp"
#include "vit/analysis/sparse_autoencoder.hpp"
#include "vit/model/vision_transformer.hpp"

namespace vit {

struct SaeFeatureStatistics {
  int64_t tokens = 0;          // patch tokens seen: images * P
  at::Tensor frequency;        // double (F): the share of those tokens the feature fires on
  at::Tensor mean_activation;  // double (F): its mean value where it fires (0 if never)
  // Each feature's M images of largest activation, strongest first, one
  // example an image (at its strongest patch): (M, F) each; activation 0 and
  // image -1 where a feature fired on fewer than M images.
  at::Tensor top_activation;  // double
  at::Tensor top_image;       // int64, the index among `images`
  at::Tensor top_patch;       // int64, 0..P-1, row-major over the patch grid
};

// The statistics of `sae`'s features on layer `layer`'s patch tokens of
// `images`, without gradients. Throws vit::Error for a layer outside 0..L,
// an SAE of another width, or examples < 1.
SaeFeatureStatistics sae_feature_statistics(VisionTransformer& model, const SparseAutoencoder& sae,
                                            int64_t layer, const ImageBatches& images,
                                            int64_t examples);

// The `count` features that fire most often, most frequent first (ties by
// index), leaving out those that never fire.
std::vector<int64_t> most_frequent_features(const SaeFeatureStatistics& statistics, int64_t count);

}  // namespace vit
