#pragma once
// timm's RandomErasing (Zhong et al., 2017) in its "pixel" mode, as DeiT
// trains with it: after normalisation, each image, with probability p, gets
// one box filled with standard-normal noise. The box takes 2% to 1/3 of the
// image, its aspect ratio log-uniform in [0.3, 1/0.3], in up to ten tries
// (none fitting: the image is left alone). Draws come from the Rng passed in,
// so the result is a pure function of the batch and that stream.
// Key: B images, C channels, H x W pixels.
#include <ATen/core/Tensor.h>

#include "vit/data/rng.hpp"

namespace vit::data {

// float (B, C, H, W), normalised, on any device -> the same, some boxes
// replaced. Under torchrun the images are rows [first_row, first_row + B) of
// a global batch of `global_rows` (0: B): the draws are made for every row
// of it, so each rank erases its rows as one process would.
at::Tensor random_erasing(const at::Tensor& images, double probability, Rng& rng,
                          int64_t first_row = 0, int64_t global_rows = 0);

}  // namespace vit::data
