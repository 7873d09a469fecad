#pragma once
// Augmentation of whole batches on the batch's own device. Every random choice
// comes from the Rng passed in (drawn on the CPU, a few numbers per image), so
// the result is a pure function of the batch and that stream.
// Key: B images, C channels, H x W pixels, K classes.
#include <cstdint>
#include <string>

#include <ATen/core/Tensor.h>

#include "vit/config.hpp"
#include "vit/data/rng.hpp"

namespace vit::data {

// A random H x W crop of each image padded by `padding` pixels on every side,
// mirrored left-right with probability 1/2 when `hflip`. The padding is never
// materialised: one gather reads each output pixel from its source pixel.
// Any dtype; (B, C, H, W) -> (B, C, H, W). Reflect needs padding < min(H, W).
at::Tensor random_crop_flip(const at::Tensor& images, int64_t padding, PaddingMode mode, bool hflip,
                            Rng& rng);

struct Augmented {
  at::Tensor images;   // uint8 (B, C, H, W) when only crop/flip ran, else float in [0, 1]
  at::Tensor targets;  // float (B, K) when mixup or cutmix is on; undefined otherwise
};

// Everything in data.augment, in order: crop + flip, RandAugment, mixup/cutmix.
// `images` is uint8 (B, C, H, W); `labels` int64 (B) on the same device.
Augmented augment_batch(const at::Tensor& images, const at::Tensor& labels, int64_t num_classes,
                        const AugmentConfig& config, Rng& rng);

}  // namespace vit::data
