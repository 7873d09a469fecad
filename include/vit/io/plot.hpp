#pragma once
// A small 2-D plot renderer: panels side by side, each with axes, round-number
// ticks, axis labels, a title, a legend and any number of line or dot series.
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <ATen/core/Tensor.h>

namespace vit::io {

enum class SeriesStyle { kLine, kMarkers, kLineAndMarkers };

struct Series {
  std::string name;       // legend entry; "" keeps the series out of the legend
  std::vector<double> x;  // same length as y; pairs with a NaN or inf are skipped
  std::vector<double> y;  //   (a line breaks there)
  SeriesStyle style = SeriesStyle::kLine;
  int color = -1;  // tab10 slot; -1 = the series' index in its panel
};

struct Panel {
  std::string title;
  std::string x_label;
  std::string y_label;
  std::vector<Series> series;
  bool integer_x = false;  // ticks only at whole numbers (layers, epochs)
  double dodge = 0.0;      // x width over which series are spread so equal-x dots don't hide
                           //   each other (e.g. 0.6 for one dot per head at each layer)
  std::optional<double> x_min, x_max, y_min, y_max;  // fixed limits; unset = fit the data
  bool legend = true;
};

struct PlotOptions {
  int64_t panel_width = 500;  // pixels per panel
  int64_t height = 500;       // pixels
  std::string title;          // optional line above all panels
};

// Where a panel's data lands: the axes rectangle in pixels and the data range shown.
struct Axes {
  int left = 0, top = 0, width = 0, height = 0;  // pixels, inside the frame
  double x_min = 0, x_max = 1, y_min = 0, y_max = 1;
  std::pair<double, double> to_pixel(double x, double y) const;  // (column, row)
};

// The axes of each panel, as render_plot draws them.
std::vector<Axes> plot_layout(const std::vector<Panel>& panels, const PlotOptions& options = {});

// The panels left to right on white: uint8 RGB (3, height, panels * panel_width).
// Degenerate data (no points, one point, all-equal values, NaNs) gives a sane range,
// not an error. Series beyond the tenth reuse tab10's colours with another marker.
at::Tensor render_plot(const std::vector<Panel>& panels, const PlotOptions& options = {});

// Round tick positions covering [lo, hi] with at most max_ticks ticks and steps
// of 1, 2 or 5 times a power of ten (whole steps when integer).
std::vector<double> nice_ticks(double lo, double hi, int max_ticks, bool integer = false);

// A tick label with as many decimals as the step needs: (0.25, 0.05) -> "0.25",
// (20000, 5000) -> "20k", (3, 1) -> "3".
std::string format_tick(double value, double step);

}  // namespace vit::io
