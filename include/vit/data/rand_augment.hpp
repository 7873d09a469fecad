#pragma once
// RandAugment-style operations (Cubuk et al., 2019) applied to whole batches:
// each image draws its own operation and sign, and each operation runs once
// on the group of images that drew it. Key: B images, C channels, H x W pixels.
#include <cstdint>

#include <ATen/core/Tensor.h>

#include "vit/data/rng.hpp"

namespace vit::data {

// The operations, in the order an image's draw indexes them.
enum class AugmentOp {
  kIdentity,
  kAutoContrast,
  kBrightness,
  kContrast,
  kColor,
  kSharpness,
  kSolarize,
  kPosterize,
  kRotate,
  kShearX,
  kShearY,
  kTranslateX,
  kTranslateY,
};
constexpr int64_t kNumAugmentOps = 13;

// One operation on float images in [0, 1] (B, C, H, W) at per-image signed
// strength `level` (B) in [-1, 1]; for the sign-free ops only |level| counts.
// Uncovered corners of the geometric ops are black.
at::Tensor apply_augment_op(AugmentOp op, const at::Tensor& images, const at::Tensor& level);

// `ops` operations per image at strength magnitude / 30 (RandAugment's 0..30 scale).
at::Tensor rand_augment(const at::Tensor& images, int64_t ops, double magnitude, Rng& rng);

}  // namespace vit::data
