#include "vit/io/matrix_figure.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>

#include <torch/torch.h>
#include <opencv2/imgproc.hpp>

#include "colour_bar.hpp"
#include "draw.hpp"
#include "mat.hpp"
#include "vit/error.hpp"
#include "vit/io/plot.hpp"

namespace vit::io {
namespace {

using detail::Align;
using detail::blues;
using detail::Font;
using detail::kLabelFont;
using detail::kTickFont;
using detail::kTitleFont;

const Font kNameFont{/*scale=*/0.45};
constexpr int kMatrixPad = 12;
constexpr int kMatrixSide = 640;  // target pixels of the matrix's longer side
constexpr int kMatrixMaxCell = 56;
constexpr int kMaxNameWidth = 150;
constexpr int kMatrixBarWidth = 18;
const cv::Scalar kMissing(200, 200, 200);

std::string cell_text(double value, int decimals) {
  if (value == 0.0) return "0";
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "%.*f", decimals, value);
  return buffer;
}

void check_matrix(const at::Tensor& values, const std::vector<std::string>& rows,
                  const std::vector<std::string>& columns, const MatrixFigureOptions& options) {
  if (!values.defined() || values.dim() != 2 || values.numel() == 0) {
    throw Error("render_matrix: values are " +
                (values.defined() ? c10::str(values.sizes()) : std::string("undefined")) +
                ", expected a non-empty (R, C) matrix");
  }
  if (values.is_complex() || values.scalar_type() == torch::kBool) {
    throw Error("render_matrix: values have dtype " +
                std::string(c10::toString(values.scalar_type())) + ", expected real numbers");
  }
  const auto check_names = [](const std::vector<std::string>& names, int64_t count,
                              const char* what) {
    if (!names.empty() && static_cast<int64_t>(names.size()) != count) {
      throw Error("render_matrix: " + std::to_string(names.size()) + " " + what + " names for " +
                  std::to_string(count) + " " + what + "s, expected " + std::to_string(count) +
                  " (or none)");
    }
  };
  check_names(rows, values.size(0), "row");
  check_names(columns, values.size(1), "column");
  if (!(options.low < options.high)) {
    throw Error("render_matrix: colour scale " + std::to_string(options.low) + ".." +
                std::to_string(options.high) + ", expected low < high");
  }
}

// The largest font (down to 0.3) at which every cell's text fits its cell.
std::optional<Font> cell_font(const at::Tensor& values, int decimals, int cell) {
  if (cell < 14) return std::nullopt;  // no number is legible in fewer pixels
  int widest = 0;
  const double* v = values.data_ptr<double>();
  for (int64_t i = 0; i < values.numel(); ++i) {
    if (std::isfinite(v[i]))
      widest = std::max(widest, detail::text_width(cell_text(v[i], decimals), Font{0.45}));
  }
  for (double scale = 0.45; scale >= 0.3 - 1e-9; scale -= 0.05) {
    const Font font{scale};
    const int width = static_cast<int>(std::ceil(widest * scale / 0.45));
    if (width <= cell - 4 && detail::line_height(font) <= cell) return font;
  }
  return std::nullopt;
}

// The labels of one axis: the names (truncated) when a row of text fits a
// cell, else a few index ticks. -> (labels with their indices, widest label).
struct AxisLabels {
  std::vector<std::pair<int, std::string>> labels;
  int widest = 0;
  bool names = false;
};

AxisLabels axis_labels(const std::vector<std::string>& given, int count, int cell) {
  AxisLabels out;
  out.names = cell >= detail::line_height(kNameFont) - 4;
  if (out.names) {
    for (int i = 0; i < count; ++i) {
      const std::string name = given.empty() ? std::to_string(i) : given[static_cast<size_t>(i)];
      out.labels.emplace_back(i, detail::truncate_text(name, kMaxNameWidth, kNameFont));
    }
  } else {
    for (double t : nice_ticks(0, count - 1, std::max(2, count * cell / 60), /*integer=*/true))
      out.labels.emplace_back(static_cast<int>(t), format_tick(t, 1));
  }
  for (const auto& [i, text] : out.labels)
    out.widest = std::max(out.widest, detail::text_width(text, out.names ? kNameFont : kTickFont));
  return out;
}

}  // namespace

at::Tensor render_matrix(const at::Tensor& matrix, const std::vector<std::string>& row_names,
                         const std::vector<std::string>& column_names,
                         const MatrixFigureOptions& options) {
  check_matrix(matrix, row_names, column_names, options);
  const int rows = static_cast<int>(matrix.size(0)), columns = static_cast<int>(matrix.size(1));
  const at::Tensor values = matrix.detach().to(torch::kCPU, torch::kDouble).contiguous();
  const double* v = values.data_ptr<double>();
  const double low = options.low, high = options.high;

  const int cell = std::clamp(kMatrixSide / std::max(rows, columns), 1, kMatrixMaxCell);
  const int matrix_width = cell * columns, matrix_height = cell * rows;
  const AxisLabels left_labels = axis_labels(row_names, rows, cell);
  const AxisLabels bottom_labels = axis_labels(column_names, columns, cell);
  const int label_height = detail::line_height(kLabelFont);
  const int title_height = options.title.empty() ? 0 : detail::line_height(kTitleFont) + 8;
  const int left = kMatrixPad + label_height + 6 + left_labels.widest + 8;
  const int top = kMatrixPad + title_height;
  const int bar_left = left + matrix_width + 20;
  const int width = std::max(
      bar_left + detail::colour_bar_width(low, high, kMatrixBarWidth, kTickFont) + kMatrixPad,
      detail::text_width(options.title, kTitleFont) + 2 * kMatrixPad);
  const int below = bottom_labels.names ? bottom_labels.widest : detail::line_height(kTickFont);
  const int height = top + std::max(matrix_height, 120) + 8 + below + 8 + label_height + kMatrixPad;
  cv::Mat canvas(height, width, CV_8UC3, detail::kWhite);

  const auto shade = [&](double value) {
    return std::clamp((value - low) / (high - low), 0.0, 1.0);
  };
  const std::optional<Font> text_font = cell_font(values, options.decimals, cell);
  for (int r = 0; r < rows; ++r) {
    for (int c = 0; c < columns; ++c) {
      const double value = v[r * columns + c];
      const cv::Rect rect(left + c * cell, top + r * cell, cell, cell);
      const bool known = std::isfinite(value);
      cv::rectangle(canvas, rect, known ? blues(shade(value)) : kMissing, cv::FILLED);
      if (!text_font || !known) continue;
      const cv::Scalar ink = shade(value) > 0.55 ? detail::kWhite : detail::kBlack;
      detail::put_text(canvas, cell_text(value, options.decimals), rect.x + cell / 2,
                       rect.y + (cell - detail::line_height(*text_font)) / 2 + 2, *text_font, ink,
                       Align::kCenter);
    }
  }
  cv::rectangle(canvas, {left - 1, top - 1}, {left + matrix_width, top + matrix_height},
                detail::kDarkGray, 1);

  // Names run down the left and, turned, along the bottom; index ticks are
  // short enough to stay level.
  const Font& row_font = left_labels.names ? kNameFont : kTickFont;
  for (const auto& [i, text] : left_labels.labels) {
    const int center = i * cell + cell / 2;
    detail::put_text(canvas, text, left - 6, top + center - detail::line_height(row_font) / 2 + 1,
                     row_font, detail::kBlack, Align::kRight);
  }
  const Font& column_font = bottom_labels.names ? kNameFont : kTickFont;
  for (const auto& [i, text] : bottom_labels.labels) {
    const int center = left + i * cell + cell / 2;
    if (bottom_labels.names) {
      detail::put_text_vertical(canvas, text, center,
                                top + matrix_height + 6 + detail::text_width(text, column_font) / 2,
                                column_font, detail::kBlack);
    } else {
      detail::put_text(canvas, text, center, top + matrix_height + 6, column_font, detail::kBlack,
                       Align::kCenter);
    }
  }

  if (!options.title.empty()) {
    detail::put_text(canvas, options.title, width / 2, kMatrixPad, kTitleFont, detail::kBlack,
                     Align::kCenter);
  }
  detail::put_text(canvas, options.column_axis, left + matrix_width / 2,
                   top + matrix_height + 8 + below + 8, kLabelFont, detail::kBlack, Align::kCenter);
  detail::put_text_vertical(canvas, options.row_axis, kMatrixPad + label_height / 2,
                            top + matrix_height / 2, kLabelFont, detail::kBlack);

  // Colour bar: the scale from low (bottom) to high (top), with round ticks.
  detail::draw_colour_bar(canvas, {bar_left, top, kMatrixBarWidth, std::max(matrix_height, 120)},
                          low, high, blues, kTickFont);
  return detail::from_mat(canvas);
}

}  // namespace vit::io
