// Shape key: D width, g old grid side, G new grid side.
// Bicubic with align_corners = false, as PyTorch's F.interpolate. `vit train --init`
// and `vit pos-embed --interpolate` both call this one function.
#include "vit/weights/pos_embed_resize.hpp"

#include <cmath>
#include <string>

#include <torch/torch.h>

#include "vit/error.hpp"

namespace vit {

int64_t pos_embed_grid(const at::Tensor& pos_embed, int64_t prefix_rows) {
  const bool tokens_by_width = pos_embed.defined() && pos_embed.dim() == 3 &&
                               pos_embed.size(0) == 1 && pos_embed.size(1) > prefix_rows &&
                               pos_embed.size(2) >= 1;
  const std::string layout = prefix_rows == 1 ? "[1, 1 + g*g, D] (the class token, then"
                                              : "[1, g*g, D] (no class token row: ";
  if (!tokens_by_width)
    throw Error("pos_embed: shape " + (pos_embed.defined() ? c10::str(pos_embed.sizes()) : "[]") +
                ", expected " + layout + " a g x g grid of patches)");
  const int64_t patches = pos_embed.size(1) - prefix_rows;
  const auto grid = static_cast<int64_t>(std::llround(std::sqrt(static_cast<double>(patches))));
  if (grid * grid != patches)
    throw Error("pos_embed: shape " + c10::str(pos_embed.sizes()) + " has " +
                std::to_string(patches) + " patch tokens" +
                (prefix_rows == 1 ? " after the class token" : "") +
                ", which is not a square grid g*g");
  return grid;
}

at::Tensor resize_pos_embed(const at::Tensor& pos_embed, int64_t new_grid, int64_t prefix_rows) {
  const int64_t grid = pos_embed_grid(pos_embed, prefix_rows);
  if (new_grid < 1)
    throw Error("pos_embed resize: new grid side " + std::to_string(new_grid) + ", expected >= 1");
  const int64_t D = pos_embed.size(2);
  const auto prefix = pos_embed.slice(/*dim=*/1, /*start=*/0, /*end=*/prefix_rows);  // (1, F, D)
  if (new_grid == grid) return pos_embed.clone();
  // In float32 at least: bicubic weights on bf16 values would lose the detail
  // that makes an interpolated embedding worth keeping.
  const auto compute_dtype = pos_embed.scalar_type() == at::kDouble ? at::kDouble : at::kFloat;
  const auto image = pos_embed
                         .slice(/*dim=*/1, /*start=*/prefix_rows)  // (1, g*g, D)
                         .to(compute_dtype)
                         .reshape({1, grid, grid, D})  // (1, g, g, D), row-major patches
                         .permute({0, 3, 1, 2});       // (1, D, g, g)
  namespace F = torch::nn::functional;
  const auto resized = F::interpolate(image, F::InterpolateFuncOptions()
                                                 .size(std::vector<int64_t>{new_grid, new_grid})
                                                 .mode(torch::kBicubic)
                                                 .align_corners(false));  // (1, D, G, G)
  const auto patches = resized
                           .permute({0, 2, 3, 1})                 // (1, G, G, D)
                           .reshape({1, new_grid * new_grid, D})  // (1, G*G, D)
                           .to(pos_embed.scalar_type());
  return torch::cat({prefix, patches}, /*dim=*/1);  // (1, F + G*G, D)
}

}  // namespace vit
