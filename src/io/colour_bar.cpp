#include "colour_bar.hpp"

#include <algorithm>
#include <array>
#include <cmath>

#include <opencv2/imgproc.hpp>

#include "vit/io/plot.hpp"

namespace vit::io::detail {
namespace {

using Stops = std::array<cv::Vec3d, 5>;

cv::Scalar interpolate(const Stops& stops, double t) {
  t = std::clamp(std::isfinite(t) ? t : 0.0, 0.0, 1.0) * (stops.size() - 1);
  const size_t i = std::min(static_cast<size_t>(t), stops.size() - 2);
  const double f = t - static_cast<double>(i);
  const cv::Vec3d c = stops[i] * (1.0 - f) + stops[i + 1] * f;
  return {c[0], c[1], c[2]};
}

std::vector<double> bar_ticks(double lo, double hi) {
  return nice_ticks(lo, hi, 6);
}

double tick_step(const std::vector<double>& ticks) {
  return ticks.size() > 1 ? ticks[1] - ticks[0] : 1.0;
}

}  // namespace

cv::Scalar blues(double t) {
  static const Stops kStops = {cv::Vec3d(247, 251, 255), cv::Vec3d(198, 219, 239),
                               cv::Vec3d(107, 174, 214), cv::Vec3d(33, 113, 181),
                               cv::Vec3d(8, 48, 107)};
  return interpolate(kStops, t);
}

cv::Scalar viridis(double t) {
  static const Stops kStops = {cv::Vec3d(68, 1, 84), cv::Vec3d(59, 82, 139),
                               cv::Vec3d(33, 145, 140), cv::Vec3d(94, 201, 98),
                               cv::Vec3d(253, 231, 37)};
  return interpolate(kStops, t);
}

int colour_bar_width(double lo, double hi, int bar_width, const Font& tick_font) {
  const auto ticks = bar_ticks(lo, hi);
  int label_width = 0;
  for (double t : ticks)
    label_width = std::max(label_width, text_width(format_tick(t, tick_step(ticks)), tick_font));
  return bar_width + 6 + label_width;
}

void draw_colour_bar(cv::Mat& canvas, const cv::Rect& bar, double lo, double hi,
                     const ColourMap& colours, const Font& tick_font) {
  const double span = hi > lo ? hi - lo : 1.0;
  for (int y = 0; y < bar.height; ++y) {
    const double t = 1.0 - (y + 0.5) / bar.height;
    cv::line(canvas, {bar.x, bar.y + y}, {bar.x + bar.width - 1, bar.y + y}, colours(t), 1);
  }
  cv::rectangle(canvas, {bar.x - 1, bar.y - 1}, {bar.x + bar.width, bar.y + bar.height}, kDarkGray,
                1);
  const auto ticks = bar_ticks(lo, hi);
  const int tick_half = line_height(tick_font) / 2;
  const int right = bar.x + bar.width;
  for (double t : ticks) {
    const int y = bar.y + static_cast<int>(std::lround((hi - t) / span * bar.height));
    cv::line(canvas, {right, y}, {right + 3, y}, kDarkGray, 1);
    put_text(canvas, format_tick(t, tick_step(ticks)), right + 6, y - tick_half + 1, tick_font,
             kDarkGray);
  }
}

}  // namespace vit::io::detail
