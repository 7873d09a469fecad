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

// F is the rows before the patches': 1 (the class token's, the default) or
// 0 (timm's register models, whose prefix has no position; F =
// ModelConfig::embedded_prefix()).

// (1, F + g*g, D) -> (1, F + G*G, D), in the input's dtype and on its device.
// G == g returns an equal copy. Throws vit::Error unless the input is
// (1, F + g*g, D) for some g >= 1 and D >= 1, and G >= 1.
at::Tensor resize_pos_embed(const at::Tensor& pos_embed, int64_t new_grid, int64_t prefix_rows = 1);

// The grid side g of a (1, F + g*g, D) position embedding; throws vit::Error
// naming the shape when the patch-token count is not a square.
int64_t pos_embed_grid(const at::Tensor& pos_embed, int64_t prefix_rows = 1);

}  // namespace vit
