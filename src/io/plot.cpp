#include "vit/io/plot.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

#include <torch/torch.h>
#include <opencv2/imgproc.hpp>

#include "draw.hpp"
#include "mat.hpp"

namespace vit::io {
namespace {

using detail::Align;
using detail::Font;
using detail::kLabelFont;
using detail::kTickFont;
using detail::kTitleFont;

const Font kLegendFont{/*scale=*/0.45};
constexpr int kTickLength = 5;
constexpr int kPad = 10;           // pixels around the panel's contents
constexpr int kLegendSample = 26;  // width of the line drawn before a legend entry
constexpr int kMarkerRadius = 4;
const cv::Scalar kFrameColor(90, 90, 90);
const cv::Scalar kGridColor(232, 232, 232);
const cv::Scalar kLegendBorder(200, 200, 200);

struct Range {
  double lo = 0.0, hi = 1.0;
};

struct LegendBox {
  int width = 0, height = 0, rows = 0, columns = 0, entry_width = 0;
  bool outside = false;
  int left = 0, top = 0;  // placed corner, in picture pixels
};

// Everything needed to draw one panel, worked out before any pixel is set.
struct PanelLayout {
  Axes axes;
  std::vector<double> x_ticks, y_ticks;
  LegendBox legend;
  int panel_left = 0, panel_top = 0, panel_width = 0, panel_height = 0;
};

// Values beyond +-1e200 count as missing too: their ranges would overflow.
bool finite(double x, double y) {
  return std::isfinite(x) && std::isfinite(y) && std::abs(x) < 1e200 && std::abs(y) < 1e200;
}

// Pixel positions far outside the picture are clamped before they become ints.
double safe_pixel(double value) {
  return std::clamp(std::isfinite(value) ? value : 0.0, -1e5, 1e5);
}

double series_offset(const Panel& panel, size_t index) {
  const size_t n = panel.series.size();
  if (n < 2 || panel.dodge == 0.0 || !std::isfinite(panel.dodge)) return 0.0;
  return (static_cast<double>(index) / static_cast<double>(n - 1) - 0.5) * panel.dodge;
}

// Data points of a series in data units, dodge applied; NaN pairs kept so lines break there.
std::vector<std::pair<double, double>> series_points(const Panel& panel, size_t index) {
  const Series& series = panel.series[index];
  const double offset = series_offset(panel, index);
  const size_t n = std::min(series.x.size(), series.y.size());
  std::vector<std::pair<double, double>> points(n);
  for (size_t i = 0; i < n; ++i)
    points[i] = {series.x[i] + offset, series.y[i]};
  return points;
}

// Pads a data range so points don't sit on the frame; widens an empty or
// single-valued range to something drawable.
Range padded(double lo, double hi, double fraction, double min_pad) {
  if (!(lo <= hi)) return {0.0, 1.0};
  if (hi - lo <= std::abs(hi) * 1e-12) {
    const double pad = lo != 0.0 ? std::abs(lo) * 0.1 : 0.5;
    return {lo - std::max(pad, min_pad), hi + std::max(pad, min_pad)};
  }
  const double pad = std::max((hi - lo) * fraction, min_pad);
  return {lo - pad, hi + pad};
}

Range apply_limits(Range range, const std::optional<double>& lo, const std::optional<double>& hi) {
  if (lo && finite(*lo, 0.0)) range.lo = *lo;
  if (hi && finite(*hi, 0.0)) range.hi = *hi;
  if (!(range.lo < range.hi)) range = padded(range.lo, range.lo, 0.0, 0.0);
  return range;
}

std::pair<Range, Range> data_ranges(const Panel& panel) {
  double x_lo = std::numeric_limits<double>::infinity(), x_hi = -x_lo;
  double y_lo = x_lo, y_hi = -x_lo;
  for (size_t s = 0; s < panel.series.size(); ++s) {
    for (const auto& [x, y] : series_points(panel, s)) {
      if (!finite(x, y)) continue;
      x_lo = std::min(x_lo, x), x_hi = std::max(x_hi, x);
      y_lo = std::min(y_lo, y), y_hi = std::max(y_hi, y);
    }
  }
  const bool any = x_lo <= x_hi;
  Range x = any ? padded(x_lo, x_hi, 0.03, panel.integer_x ? 0.5 : 0.0) : Range{};
  Range y = any ? padded(y_lo, y_hi, 0.06, 0.0) : Range{};
  return {apply_limits(x, panel.x_min, panel.x_max), apply_limits(y, panel.y_min, panel.y_max)};
}

int widest_label(const std::vector<double>& ticks) {
  const double step = ticks.size() > 1 ? ticks[1] - ticks[0] : 1.0;
  int widest = 0;
  for (double t : ticks)
    widest = std::max(widest, detail::text_width(format_tick(t, step), kTickFont));
  return widest;
}

// As many x ticks as fit side by side with a clear gap between their labels.
std::vector<double> fitting_x_ticks(const Range& range, int width, bool integer) {
  for (int count = std::max(2, width / 40); count >= 2; --count) {
    std::vector<double> ticks = nice_ticks(range.lo, range.hi, count, integer);
    if (static_cast<int>(ticks.size()) * (widest_label(ticks) + 18) <= width) return ticks;
  }
  return nice_ticks(range.lo, range.hi, 2, integer);
}

std::vector<const Series*> legend_entries(const Panel& panel) {
  std::vector<const Series*> entries;
  if (!panel.legend) return entries;
  for (const Series& series : panel.series) {
    if (!series.name.empty()) entries.push_back(&series);
  }
  return entries;
}

LegendBox measure_legend(const Panel& panel, int max_height) {
  LegendBox box;
  const auto entries = legend_entries(panel);
  if (entries.empty()) return box;
  int text = 0;
  for (const Series* series : entries) {
    text = std::max(text, detail::text_width(series->name, kLegendFont));
  }
  const int row_height = detail::line_height(kLegendFont) + 2;
  const int fit_rows = std::max(1, (max_height - 12) / row_height);
  const int count = static_cast<int>(entries.size());
  box.columns = (count + fit_rows - 1) / fit_rows;
  box.rows = (count + box.columns - 1) / box.columns;
  box.entry_width = kLegendSample + 6 + text + 10;
  box.width = box.columns * box.entry_width + 6;
  box.height = box.rows * row_height + 10;
  return box;
}

// Counts data points and line samples that would sit under a legend at `rect`.
int covered_points(const Panel& panel, const Axes& axes, const cv::Rect& rect) {
  const cv::Rect area(rect.x - 4, rect.y - 4, rect.width + 8, rect.height + 8);
  int covered = 0;
  for (size_t s = 0; s < panel.series.size(); ++s) {
    const auto points = series_points(panel, s);
    const bool line = panel.series[s].style != SeriesStyle::kMarkers;
    for (size_t i = 0; i < points.size(); ++i) {
      if (!finite(points[i].first, points[i].second)) continue;
      auto [px, py] = axes.to_pixel(points[i].first, points[i].second);
      px = safe_pixel(px), py = safe_pixel(py);
      covered += area.contains(cv::Point(static_cast<int>(px), static_cast<int>(py)));
      if (!line || i + 1 >= points.size() || !finite(points[i + 1].first, points[i + 1].second)) {
        continue;
      }
      auto [qx, qy] = axes.to_pixel(points[i + 1].first, points[i + 1].second);
      qx = safe_pixel(qx), qy = safe_pixel(qy);
      const int samples = std::min(2000, static_cast<int>(std::hypot(qx - px, qy - py) / 3) + 1);
      for (int k = 1; k < samples; ++k) {
        const double t = static_cast<double>(k) / samples;
        covered += area.contains(
            cv::Point(static_cast<int>(px + t * (qx - px)), static_cast<int>(py + t * (qy - py))));
      }
    }
  }
  return covered;
}

// Puts the legend in the first free inside corner (upper right first, like
// matplotlib's "best"); returns false when every corner covers data.
bool place_legend_inside(const Panel& panel, const Axes& axes, LegendBox& box) {
  const int inset = 8;
  const int right = axes.left + axes.width - inset - box.width;
  const int bottom = axes.top + axes.height - inset - box.height;
  const cv::Point corners[] = {{right, axes.top + inset},
                               {axes.left + inset, axes.top + inset},
                               {right, bottom},
                               {axes.left + inset, bottom}};
  if (box.width + 2 * inset > axes.width || box.height + 2 * inset > axes.height) return false;
  for (const cv::Point& corner : corners) {
    if (covered_points(panel, axes, {corner.x, corner.y, box.width, box.height}) == 0) {
      box.left = corner.x;
      box.top = corner.y;
      return true;
    }
  }
  return false;
}

PanelLayout layout_panel(const Panel& panel, int left, int top, int width, int height) {
  PanelLayout layout;
  layout.panel_left = left, layout.panel_top = top;
  layout.panel_width = width, layout.panel_height = height;
  const auto [x_range, y_range] = data_ranges(panel);

  const int title_height = panel.title.empty() ? 0 : detail::line_height(kTitleFont) + 6;
  const int label_height = detail::line_height(kLabelFont);
  const int tick_height = detail::line_height(kTickFont);
  Axes& axes = layout.axes;
  axes.top = top + kPad + title_height;
  const int bottom_margin =
      kTickLength + 4 + tick_height + (panel.x_label.empty() ? 0 : label_height + 4) + kPad;
  axes.height = std::max(10, top + height - bottom_margin - axes.top);
  layout.y_ticks = nice_ticks(y_range.lo, y_range.hi, std::clamp(axes.height / 45, 2, 10));
  const int y_label_width = panel.y_label.empty() ? 0 : label_height + 6;
  axes.left = left + kPad + y_label_width + widest_label(layout.y_ticks) + kTickLength + 4;
  axes.x_min = x_range.lo, axes.x_max = x_range.hi;
  axes.y_min = y_range.lo, axes.y_max = y_range.hi;

  layout.legend = measure_legend(panel, axes.height);
  const int right_pad = 24;  // half of a 5-digit tick label under the right edge
  axes.width = std::max(10, left + width - right_pad - axes.left);
  if (layout.legend.rows > 0 && !place_legend_inside(panel, axes, layout.legend)) {
    // No free corner: the legend moves out to the right of the axes.
    layout.legend.outside = true;
    axes.width = std::max(10, left + width - right_pad - layout.legend.width - 10 - axes.left);
    layout.legend.left = axes.left + axes.width + 10;
    layout.legend.top = axes.top;
  }
  layout.x_ticks = fitting_x_ticks(x_range, axes.width, panel.integer_x);
  return layout;
}

std::vector<PanelLayout> layout_all(const std::vector<Panel>& panels, const PlotOptions& options) {
  const int panel_width = static_cast<int>(std::clamp<int64_t>(options.panel_width, 120, 8000));
  const int height = static_cast<int>(std::clamp<int64_t>(options.height, 120, 8000));
  const int title_height = options.title.empty() ? 0 : detail::line_height(kTitleFont) + kPad;
  std::vector<PanelLayout> layouts;
  for (size_t i = 0; i < panels.size(); ++i) {
    layouts.push_back(layout_panel(panels[i], static_cast<int>(i) * panel_width, title_height,
                                   panel_width, height - title_height));
  }
  return layouts;
}

void draw_axes(cv::Mat& canvas, const Panel& panel, const PanelLayout& layout) {
  const Axes& axes = layout.axes;
  const int right = axes.left + axes.width;
  const int bottom = axes.top + axes.height;
  const double x_step = layout.x_ticks.size() > 1 ? layout.x_ticks[1] - layout.x_ticks[0] : 1.0;
  const double y_step = layout.y_ticks.size() > 1 ? layout.y_ticks[1] - layout.y_ticks[0] : 1.0;
  for (double t : layout.x_ticks) {
    const int x = static_cast<int>(std::lround(axes.to_pixel(t, 0).first));
    cv::line(canvas, {x, axes.top}, {x, bottom}, kGridColor, 1);
    cv::line(canvas, {x, bottom}, {x, bottom + kTickLength}, kFrameColor, 1);
    detail::put_text(canvas, format_tick(t, x_step), x, bottom + kTickLength + 4, kTickFont,
                     detail::kDarkGray, Align::kCenter);
  }
  const int tick_half = detail::line_height(kTickFont) / 2;
  for (double t : layout.y_ticks) {
    const int y = static_cast<int>(std::lround(axes.to_pixel(0, t).second));
    cv::line(canvas, {axes.left, y}, {right, y}, kGridColor, 1);
    cv::line(canvas, {axes.left - kTickLength, y}, {axes.left, y}, kFrameColor, 1);
    detail::put_text(canvas, format_tick(t, y_step), axes.left - kTickLength - 4, y - tick_half + 1,
                     kTickFont, detail::kDarkGray, Align::kRight);
  }
  cv::rectangle(canvas, {axes.left - 1, axes.top - 1}, {right, bottom}, kFrameColor, 1);

  const int center_x = axes.left + axes.width / 2;
  if (!panel.title.empty()) {
    const std::string title =
        detail::truncate_text(panel.title, layout.panel_width - 2 * kPad, kTitleFont);
    detail::put_text(canvas, title, center_x, layout.panel_top + kPad, kTitleFont, detail::kBlack,
                     Align::kCenter);
  }
  if (!panel.x_label.empty()) {
    const int top = bottom + kTickLength + 4 + detail::line_height(kTickFont) + 4;
    detail::put_text(canvas, detail::truncate_text(panel.x_label, axes.width, kLabelFont), center_x,
                     top, kLabelFont, detail::kBlack, Align::kCenter);
  }
  if (!panel.y_label.empty()) {
    const int cx = layout.panel_left + kPad + detail::line_height(kLabelFont) / 2;
    detail::put_text_vertical(canvas, detail::truncate_text(panel.y_label, axes.height, kLabelFont),
                              cx, axes.top + axes.height / 2, kLabelFont, detail::kBlack);
  }
}

cv::Point fixed(double x, double y) {
  return {static_cast<int>(std::lround(x * 16)), static_cast<int>(std::lround(y * 16))};
}

void draw_series(cv::Mat& canvas, const Panel& panel, size_t index, const Axes& axes) {
  const Series& series = panel.series[index];
  const int slot = series.color >= 0 ? series.color : static_cast<int>(index);
  const cv::Scalar color = detail::palette_color(slot);
  const auto points = series_points(panel, index);
  // Drawing into the axes' sub-picture clips whatever falls outside the limits.
  cv::Mat area = canvas(cv::Rect(axes.left, axes.top, axes.width, axes.height));
  auto local = [&](double x, double y) {
    const auto [px, py] = axes.to_pixel(x, y);
    return cv::Point2d(safe_pixel(px - axes.left), safe_pixel(py - axes.top));
  };
  if (series.style != SeriesStyle::kMarkers) {
    std::vector<cv::Point> run;
    auto flush = [&] {
      if (run.size() > 1) cv::polylines(area, run, false, color, 2, cv::LINE_AA, 4);
      run.clear();
    };
    for (const auto& [x, y] : points) {
      if (!finite(x, y)) {
        flush();
        continue;
      }
      const cv::Point2d p = local(x, y);
      run.push_back(fixed(p.x, p.y));
    }
    flush();
  }
  if (series.style != SeriesStyle::kLine) {
    const int radius = series.style == SeriesStyle::kMarkers ? kMarkerRadius : kMarkerRadius - 1;
    for (const auto& [x, y] : points) {
      if (finite(x, y)) detail::draw_marker(area, local(x, y), slot / 10, radius, color);
    }
  }
}

void draw_legend(cv::Mat& canvas, const Panel& panel, const LegendBox& box) {
  const auto entries = legend_entries(panel);
  if (entries.empty()) return;
  const cv::Rect rect(box.left, box.top, box.width, box.height);
  cv::rectangle(canvas, rect, detail::kWhite, cv::FILLED);
  cv::rectangle(canvas, rect, kLegendBorder, 1);
  const int row_height = detail::line_height(kLegendFont) + 2;
  for (size_t e = 0; e < entries.size(); ++e) {
    const Series& series = *entries[e];
    const size_t index = static_cast<size_t>(&series - panel.series.data());
    const int slot = series.color >= 0 ? series.color : static_cast<int>(index);
    const cv::Scalar color = detail::palette_color(slot);
    const int column = static_cast<int>(e) / box.rows;
    const int row = static_cast<int>(e) % box.rows;
    const int x = box.left + 6 + column * box.entry_width;
    const int y = box.top + 5 + row * row_height;
    const int mid = y + row_height / 2;
    if (series.style != SeriesStyle::kMarkers) {
      cv::line(canvas, {x, mid}, {x + kLegendSample, mid}, color, 2, cv::LINE_AA);
    }
    if (series.style != SeriesStyle::kLine) {
      detail::draw_marker(canvas, {x + kLegendSample / 2.0, static_cast<double>(mid)}, slot / 10,
                          kMarkerRadius, color);
    }
    detail::put_text(canvas, series.name, x + kLegendSample + 6,
                     mid - detail::line_height(kLegendFont) / 2 + 1, kLegendFont, detail::kBlack);
  }
}

}  // namespace

std::pair<double, double> Axes::to_pixel(double x, double y) const {
  const double column = left + (x - x_min) / (x_max - x_min) * width;
  const double row = top + (y_max - y) / (y_max - y_min) * height;
  return {column, row};
}

std::vector<double> nice_ticks(double lo, double hi, int max_ticks, bool integer) {
  if (!std::isfinite(lo) || !std::isfinite(hi)) return {};
  if (lo > hi) std::swap(lo, hi);
  max_ticks = std::max(max_ticks, 2);
  const double span = hi - lo;
  if (span <= 0.0) return {lo};
  if (!std::isfinite(span) || !(span / max_ticks > 0.0)) return {lo, hi};
  // step = mantissa * 10^exponent. Ticks are built as (integer * mantissa)
  // scaled by an exact power of ten, so 0.6 comes out as 0.6, not 0.6000000000000001.
  int exponent = static_cast<int>(std::floor(std::log10(span / max_ticks)));
  if (integer) exponent = std::max(exponent, 0);
  auto scaled = [](double units, int e) {
    return e >= 0 ? units * std::pow(10.0, e) : units / std::pow(10.0, -e);
  };
  for (int guard = 0; guard < 64; ++guard, ++exponent) {
    for (double mantissa : {1.0, 2.0, 5.0}) {
      const double step = scaled(mantissa, exponent);
      const double first = std::ceil(lo / step - 1e-9);
      const double last = std::floor(hi / step + 1e-9);
      if (last < first || last - first + 1 > max_ticks) continue;
      std::vector<double> ticks;
      for (double k = first; k <= last; k += 1.0) {
        ticks.push_back(scaled(k * mantissa, exponent) + 0.0);  // + 0.0 turns -0 into 0
      }
      return ticks;
    }
  }
  return {lo, hi};
}

std::string format_tick(double value, double step) {
  step = std::abs(step);
  if (!std::isfinite(value)) return "";
  if (step > 0 && std::abs(value) < step * 1e-6) value = 0.0;
  char buffer[64];
  auto with_decimals = [&](double shown, double shown_step, const char* suffix) {
    int decimals = 0;
    if (shown_step > 0 && shown_step < 1.0) {
      decimals = static_cast<int>(std::ceil(-std::log10(shown_step) - 1e-9));
    }
    std::snprintf(buffer, sizeof(buffer), "%.*f%s", decimals, shown, value == 0.0 ? "" : suffix);
    return std::string(buffer);
  };
  // The unit follows the step, so every label of an axis uses the same one.
  if (step >= 1e5) return with_decimals(value / 1e6, step / 1e6, "M");
  if (step >= 1e3) return with_decimals(value / 1e3, step / 1e3, "k");
  if (step > 0 && step < 1e-4) {
    std::snprintf(buffer, sizeof(buffer), "%.1e", value);
    return buffer;
  }
  return with_decimals(value, step, "");
}

std::vector<Axes> plot_layout(const std::vector<Panel>& panels, const PlotOptions& options) {
  std::vector<Axes> axes;
  for (const PanelLayout& layout : layout_all(panels, options))
    axes.push_back(layout.axes);
  return axes;
}

at::Tensor render_plot(const std::vector<Panel>& panels, const PlotOptions& options) {
  const std::vector<PanelLayout> layouts = layout_all(panels, options);
  const int panel_width = static_cast<int>(std::clamp<int64_t>(options.panel_width, 120, 8000));
  const int height = static_cast<int>(std::clamp<int64_t>(options.height, 120, 8000));
  const int width = panel_width * static_cast<int>(std::max<size_t>(panels.size(), 1));
  cv::Mat canvas(height, width, CV_8UC3, detail::kWhite);
  if (!options.title.empty()) {
    detail::put_text(canvas, detail::truncate_text(options.title, width - 2 * kPad, kTitleFont),
                     width / 2, kPad / 2, kTitleFont, detail::kBlack, Align::kCenter);
  }
  for (size_t p = 0; p < panels.size(); ++p) {
    draw_axes(canvas, panels[p], layouts[p]);
    for (size_t s = 0; s < panels[p].series.size(); ++s) {
      draw_series(canvas, panels[p], s, layouts[p].axes);
    }
    draw_legend(canvas, panels[p], layouts[p].legend);
  }
  return detail::from_mat(canvas);
}

}  // namespace vit::io
