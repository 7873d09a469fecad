#include "cli/analysis_outputs.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>

#include <fmt/format.h>
#include <torch/torch.h>

#include "vit/io/grid.hpp"

namespace vit::cli {
namespace {

namespace fs = std::filesystem;
constexpr int64_t kGridColumns = 4;  // each tile is two pictures wide
constexpr size_t kMaxStemLength = 48;

}  // namespace

std::string map_file_name(const std::string& id, size_t position, size_t count) {
  std::string stem = id.rfind("val:", 0) == 0 ? "val" + id.substr(4) : fs::path(id).stem().string();
  if (stem.size() > kMaxStemLength) stem.resize(kMaxStemLength);
  for (char& ch : stem)
    if (!std::isalnum(static_cast<unsigned char>(ch)) && ch != '-' && ch != '_' && ch != '.')
      ch = '_';
  const int width = std::max<int>(2, static_cast<int>(std::to_string(count - 1).size()));
  return fmt::format("{:0{}d}-{}.png", position, width, stem);
}

std::string class_name(const std::vector<std::string>& classes, int64_t index) {
  return index >= 0 && index < static_cast<int64_t>(classes.size()) ? classes[index]
                                                                    : std::to_string(index);
}

std::vector<double> to_doubles(const at::Tensor& t) {
  const auto c = t.to(torch::kDouble).contiguous();
  return {c.data_ptr<double>(), c.data_ptr<double>() + c.numel()};
}

std::vector<std::vector<double>> map_rows(const at::Tensor& map, int decimals) {
  // float32 first: its values printed as doubles would show float noise digits otherwise.
  const auto m = map.detach().to(torch::kCPU, torch::kFloat).contiguous();  // (rows, columns)
  const double scale = decimals >= 0 ? std::pow(10.0, decimals) : 0.0;
  std::vector<std::vector<double>> rows(static_cast<size_t>(m.size(0)));
  const float* v = m.data_ptr<float>();
  for (int64_t r = 0; r < m.size(0); ++r)
    for (int64_t c = 0; c < m.size(1); ++c) {
      const double value = v[r * m.size(1) + c];
      rows[r].push_back(decimals >= 0 ? std::round(value * scale) / scale : value);
    }
  return rows;
}

at::Tensor overlay_grid(const std::vector<OverlayPicture>& pictures,
                        const std::vector<std::string>& classes, const std::string& title) {
  std::vector<io::Tile> tiles;
  for (const auto& p : pictures) {
    io::Tile tile;
    tile.image = p.picture;
    const std::string predicted = "pred: " + class_name(classes, p.predicted);
    if (p.label >= 0) {
      tile.caption = "true: " + class_name(classes, p.label) + "\n" + predicted;
      if (p.label != p.predicted) tile.color = {200, 0, 0};
    } else {
      tile.caption = fs::path(p.id).filename().string() + "\n" + predicted;
    }
    tiles.push_back(tile);
  }
  io::GridOptions grid_options;
  grid_options.columns = kGridColumns;
  grid_options.title = title;
  return io::make_grid(tiles, grid_options);
}

io::Panel counting_panel(const std::string& title, const std::string& x_label,
                         const std::string& y_label) {
  io::Panel panel;
  panel.title = title;
  panel.x_label = x_label;
  panel.y_label = y_label;
  panel.integer_x = true;
  return panel;
}

io::Panel layer_panel(const std::string& title, const std::string& y_label) {
  io::Panel panel = counting_panel(title, "layer (0 = embeddings)", y_label);
  panel.y_min = 0;
  return panel;
}

std::vector<double> layer_axis(size_t count) {
  std::vector<double> x;
  for (size_t l = 0; l < count; ++l)
    x.push_back(static_cast<double>(l));
  return x;
}

}  // namespace vit::cli
