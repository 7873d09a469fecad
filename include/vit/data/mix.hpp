#pragma once
// Mixup (Zhang et al., 2018) and CutMix (Yun et al., 2019) on whole batches,
// with soft targets. Each image is mixed with its mirror in the batch (image
// B-1-i), as timm does, so no second batch is drawn.
// Key: B images, C channels, H x W pixels, K classes.
#include <cstdint>

#include <ATen/core/Tensor.h>

#include "vit/config.hpp"
#include "vit/data/rng.hpp"

namespace vit::data {

struct Mixed {
  at::Tensor images;   // float (B, C, H, W)
  at::Tensor targets;  // float (B, K), rows sum to 1
};

// True when mixup_alpha or cutmix_alpha is positive.
bool mixing_enabled(const AugmentConfig& config);

// With probability mix_prob: mixup (blend weight lam ~ Beta(a, a)) or CutMix
// (a box of area about 1 - lam pasted in; lam is then set to the true kept
// area), chosen 50/50 when both alphas are positive. Otherwise the images are
// unchanged and the targets one-hot. Float images; labels int64 (B).
Mixed mix_batch(const at::Tensor& images, const at::Tensor& labels, int64_t num_classes,
                const AugmentConfig& config, Rng& rng);

}  // namespace vit::data
