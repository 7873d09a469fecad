#pragma once
// One patch of an image outlined: where a sparse autoencoder's feature fires
// most (`vit sae features`).
#include <array>
#include <cstdint>

#include <ATen/core/Tensor.h>

namespace vit::io {

// `image` uint8 (C, H, W), C = 1 or 3, enlarged by display_scale(H, W,
// min_side) with nearest-neighbour, with the square patch at grid position
// (row, column) of side `patch_size` (in the image's own pixels) outlined in
// `color`, 2 pixels wide, drawn inside the patch so that its neighbours stay
// visible. Returns uint8 RGB (3, H * k, W * k). Throws vit::Error for a patch
// outside the image.
at::Tensor outlined_patch(const at::Tensor& image, int64_t row, int64_t column, int64_t patch_size,
                          int64_t min_side = 128,
                          const std::array<uint8_t, 3>& color = {255, 215, 0});

}  // namespace vit::io
