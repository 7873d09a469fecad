#pragma once
// Resizing a position embedding to another patch grid, as the ViT paper does when it
// fine-tunes at a higher resolution (section 3.2): the prefix rows are kept, and the
// g x g grid is resized as a D-channel image by F.interpolate(mode="bicubic").
// Shape key: D width, g old grid side, G new grid side.
#include <cstdint>

#include <ATen/core/Tensor.h>

namespace vit {

// F = prefix_rows (ModelConfig::embedded_prefix()): 1, or 0 for timm's register models.

// (1, F + g*g, D) -> (1, F + G*G, D), in the input's dtype and on its device; an
// equal copy for G == g. Throws vit::Error unless g, D, G >= 1.
at::Tensor resize_pos_embed(const at::Tensor& pos_embed, int64_t new_grid, int64_t prefix_rows = 1);

// g of a (1, F + g*g, D) position embedding; throws vit::Error naming the shape when
// the patch-token count is not a square.
int64_t pos_embed_grid(const at::Tensor& pos_embed, int64_t prefix_rows = 1);

}  // namespace vit
