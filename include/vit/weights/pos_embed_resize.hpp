#pragma once
// Resizing a position embedding to another patch grid, as the ViT paper does
// when it fine-tunes at a higher resolution (section 3.2): the class token's
// embedding is kept, and the g x g grid of patch embeddings is treated as a
// D-channel image and resized by 2-D bicubic interpolation (align_corners =
// false, PyTorch's F.interpolate(mode="bicubic")). `vit train --init` and
// `vit pos-embed --interpolate` both call this one function.
//
// Shape key: D width, g old grid side, G new grid side.
#include <cstdint>

#include <ATen/core/Tensor.h>

namespace vit {

// (1, 1 + g*g, D) -> (1, 1 + G*G, D), in the input's dtype and on its device.
// G == g returns an equal copy. Throws vit::Error unless the input is
// (1, 1 + g*g, D) for some g >= 1 and D >= 1, and G >= 1.
at::Tensor resize_pos_embed(const at::Tensor& pos_embed, int64_t new_grid);

// The grid side g of a (1, 1 + g*g, D) position embedding; throws vit::Error
// naming the shape when the patch-token count is not a square.
int64_t pos_embed_grid(const at::Tensor& pos_embed);

}  // namespace vit
