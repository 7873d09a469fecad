#pragma once
// What the commands share on the way out: tensors as JSON, and for the map-drawing
// ones (rollout, saliency, attention) file names, class names and overlay grids.
#include <cstdint>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

#include "vit/io/plot.hpp"

namespace vit::cli {

// "03-cat.png" for the file cat.jpg, "00-val17.png" for sample val:17: unique and in
// grid order; anything but letters, digits, '-', '_' and '.' becomes '_'.
std::string map_file_name(const std::string& id, size_t position, size_t count);

// The class's name, or its index when the model has no names for it.
std::string class_name(const std::vector<std::string>& classes, int64_t index);

std::vector<double> to_doubles(const at::Tensor& t);  // in order

// A 2-D map as JSON rows, rounded to `decimals` decimals (< 0: float32's values).
std::vector<std::vector<double>> map_rows(const at::Tensor& map, int decimals = -1);

// One picture of an overlay grid and what its caption says.
struct OverlayPicture {
  at::Tensor picture;  // uint8 RGB, e.g. io::heatmap_beside's original | overlay
  std::string id;      // the file's path or "val:I"
  int64_t label = -1;  // the true class; -1 when unknown (--images)
  int64_t predicted = 0;
};

// Captioned "true: A / pred: B" (red when they differ) or with the file's name, four
// to a row, under `title`.
at::Tensor overlay_grid(const std::vector<OverlayPicture>& pictures,
                        const std::vector<std::string>& classes, const std::string& title);

// A panel whose x axis counts (layers, epochs): integer ticks. layer_panel: against
// the layer (0 = the embeddings), y from 0; layer_axis: its x values 0 .. count - 1.
io::Panel counting_panel(const std::string& title, const std::string& x_label,
                         const std::string& y_label);
io::Panel layer_panel(const std::string& title, const std::string& y_label);
std::vector<double> layer_axis(size_t count);

}  // namespace vit::cli
