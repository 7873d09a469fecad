// Shape key: k components, C channels, P patch side.
#include "vit/io/filter_figure.hpp"

#include <fmt/format.h>
#include <torch/torch.h>

#include "vit/error.hpp"
#include "vit/io/grid.hpp"
#include "vit/io/image_io.hpp"

namespace vit::io {
namespace {

void check_shapes(const at::Tensor& components, const at::Tensor& ratios, int64_t channels,
                  int64_t patch_size) {
  const int64_t length = channels * patch_size * patch_size;
  if (!components.defined() || components.dim() != 2 || components.size(1) != length ||
      !ratios.defined() || ratios.dim() != 1 || ratios.size(0) != components.size(0)) {
    throw Error(
        "render_filters: components " +
        (components.defined() ? c10::str(components.sizes()) : std::string("undefined")) +
        " and ratios " + (ratios.defined() ? c10::str(ratios.sizes()) : std::string("undefined")) +
        "; expected (k, " + std::to_string(length) + ") and (k) for " + std::to_string(channels) +
        " channels of " + std::to_string(patch_size) + "x" + std::to_string(patch_size));
  }
}

}  // namespace

at::Tensor filter_tile(const at::Tensor& component, int64_t channels, int64_t patch_size) {
  const auto values = component.detach()
                          .to(torch::kCPU, torch::kDouble)
                          .reshape({channels, patch_size, patch_size});  // (C, P, P)
  const double low = values.min().item<double>(), high = values.max().item<double>();
  if (!(high > low)) return torch::full({channels, patch_size, patch_size}, 128, torch::kUInt8);
  return to_uint8((values - low) / (high - low));
}

at::Tensor render_filters(const at::Tensor& components, const at::Tensor& explained_variance_ratio,
                          int64_t channels, int64_t patch_size,
                          const FilterFigureOptions& options) {
  check_shapes(components, explained_variance_ratio, channels, patch_size);
  const auto ratios = explained_variance_ratio.to(torch::kCPU, torch::kDouble);
  std::vector<Tile> tiles;
  for (int64_t i = 0; i < components.size(0); ++i) {
    Tile tile;
    tile.image = filter_tile(components[i], channels, patch_size);
    tile.caption = fmt::format("PC {}\n{:.1f}% var.", i + 1, 100 * ratios[i].item<double>());
    tiles.push_back(tile);
  }
  GridOptions grid;
  grid.columns = options.columns;
  grid.min_tile_side = 72;
  grid.title = options.title;
  grid.footer = options.footer;
  return make_grid(tiles, grid);
}

}  // namespace vit::io
