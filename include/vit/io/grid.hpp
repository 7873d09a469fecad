#pragma once
// Labelled grids of pictures: `vit data` samples.png, `vit eval` worst.png and
// the `vit rollout` grid.png.
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

namespace vit::io {

struct Tile {
  at::Tensor image;                          // uint8 (C, H, W), C = 1 or 3 (RGB)
  std::string caption;                       // drawn under the image; '\n' starts a new line
  std::array<uint8_t, 3> color = {0, 0, 0};  // caption colour, RGB (e.g. red for a wrong guess)
};

struct GridOptions {
  int64_t columns = 8;         // tiles per row (fewer when there are fewer tiles)
  int64_t min_tile_side = 96;  // tiles are enlarged by a whole factor (nearest) to at least this
  int64_t margin = 10;         // pixels around and between tiles
  int64_t caption_lines = 2;   // lines a caption may take before it is shrunk and cut
  double font_scale = 0.5;     // Hershey scale of captions (0.5 = ~11 px capitals)
  std::string title;           // optional line above the grid
  std::string footer;          // optional note under the grid (wrapped, up to 3 lines)
};

// A white picture of `tiles` in rows of `options.columns`, each tile above its
// caption. Captions are shrunk (to scale 0.35), wrapped and finally cut with
// ".." so they never overflow their tile. Tiles of different sizes are centred
// in cells of the largest size. Returns uint8 RGB (3, H, W).
at::Tensor make_grid(const std::vector<Tile>& tiles, const GridOptions& options = {});

}  // namespace vit::io
