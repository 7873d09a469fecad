#pragma once
// Private to src/io: the vertical colour bar beside a matrix picture, and the
// colour maps the pictures use.
#include <functional>

#include <opencv2/core.hpp>

#include "draw.hpp"

namespace vit::io::detail {

// t in [0, 1] (clamped; NaN as 0) -> an RGB colour.
using ColourMap = std::function<cv::Scalar(double)>;

// Matplotlib's "Blues" and "viridis", interpolated between five stops.
cv::Scalar blues(double t);
cv::Scalar viridis(double t);

// The width that draw_colour_bar needs for `bar_width` and its tick labels.
int colour_bar_width(double lo, double hi, int bar_width, const Font& tick_font);

// Fills `bar` from `lo` (bottom) to `hi` (top) with `colours`, frames it and
// labels round ticks on its right.
void draw_colour_bar(cv::Mat& canvas, const cv::Rect& bar, double lo, double hi,
                     const ColourMap& colours, const Font& tick_font);

}  // namespace vit::io::detail
