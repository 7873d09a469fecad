#pragma once
// Attention maps drawn over their images as JET heat-maps (blue = low, red =
// high), enlarged so that 28- or 32-pixel images are big enough to look at.
#include <cstdint>

#include <ATen/core/Tensor.h>

namespace vit::io {

// The whole-number factor that brings the image's shorter side to at least
// `min_side` pixels (1 when it is already that big): 32 -> 4, 28 -> 5, 224 -> 1.
int64_t display_scale(int64_t height, int64_t width, int64_t min_side = 128);

// Blends `mask` (gh, gw), any float values taken as [0, 1] (NaN as 0), over
// `image` uint8 (C, H, W), C = 1 or 3. The image is enlarged by display_scale
// with nearest-neighbour (its pixels stay sharp squares) and the mask bicubically
// to the same size (it is smooth). Returns uint8 RGB (3, H * k, W * k):
// (1 - alpha) * image + alpha * JET(mask).
at::Tensor heatmap_overlay(const at::Tensor& image, const at::Tensor& mask, double alpha = 0.5,
                           int64_t min_side = 128);

// The enlarged original on the left and its heat-map overlay on the right with
// a white gap of `gap` pixels: uint8 RGB (3, H * k, 2 * W * k + gap).
at::Tensor heatmap_beside(const at::Tensor& image, const at::Tensor& mask, double alpha = 0.5,
                          int64_t min_side = 128, int64_t gap = 8);

}  // namespace vit::io
