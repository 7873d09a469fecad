#include "vit/io/confusion.hpp"

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

const Font kTitleFont{/*scale=*/0.6};
const Font kLabelFont{/*scale=*/0.5};
const Font kNameFont{/*scale=*/0.45};
const Font kTickFont{/*scale=*/0.45};
constexpr int kPad = 12;
constexpr int kMatrixSide = 640;  // target pixels of the whole matrix
constexpr int kMaxCell = 56;
constexpr int kMaxNameWidth = 150;
constexpr int kBarWidth = 18;

std::string cell_text(double value, bool fraction) {
  if (value == 0.0) return "0";
  char buffer[32];
  if (fraction) {
    std::snprintf(buffer, sizeof(buffer), "%.2f", value);
  } else {
    std::snprintf(buffer, sizeof(buffer), "%.0f", value);
  }
  return buffer;
}

// The values to show, (K, K) doubles: row fractions or the counts themselves.
at::Tensor cell_values(const at::Tensor& counts, bool normalize) {
  at::Tensor values = counts.detach().to(torch::kCPU, torch::kDouble).nan_to_num(0.0);
  if (normalize) {
    const at::Tensor rows = values.sum(1, /*keepdim=*/true).clamp_min(1e-300);
    values = values / rows;
  }
  return values.contiguous();
}

void check_counts(const at::Tensor& counts, const std::vector<std::string>& names) {
  if (!counts.defined() || counts.dim() != 2 || counts.size(0) != counts.size(1) ||
      counts.size(0) == 0) {
    throw Error("render_confusion: counts are " +
                (counts.defined() ? c10::str(counts.sizes()) : std::string("undefined")) +
                ", expected a square (K, K) matrix with K >= 1");
  }
  if (counts.is_complex() || counts.scalar_type() == torch::kBool) {
    throw Error("render_confusion: counts have dtype " +
                std::string(c10::toString(counts.scalar_type())) + ", expected numbers");
  }
  if ((counts.to(torch::kDouble) < 0).any().item<bool>()) {
    throw Error("render_confusion: counts contain negative values, expected counts >= 0");
  }
  if (!names.empty() && static_cast<int64_t>(names.size()) != counts.size(0)) {
    throw Error("render_confusion: " + std::to_string(names.size()) + " class names for a " +
                std::to_string(counts.size(0)) + " x " + std::to_string(counts.size(0)) +
                " matrix, expected " + std::to_string(counts.size(0)) + " (or none)");
  }
}

// The largest font (down to 0.3) at which every cell's text fits its cell.
std::optional<Font> cell_font(const at::Tensor& values, bool fraction, int cell) {
  if (cell < 14) return std::nullopt;  // no number is legible in fewer pixels
  const int64_t k = values.size(0);
  int widest = 0;
  const double* v = values.data_ptr<double>();
  for (int64_t i = 0; i < k * k; ++i) {
    widest = std::max(widest, detail::text_width(cell_text(v[i], fraction), Font{0.45}));
  }
  for (double scale = 0.45; scale >= 0.3 - 1e-9; scale -= 0.05) {
    const Font font{scale};
    const int width = static_cast<int>(std::ceil(widest * scale / 0.45));
    if (width <= cell - 4 && detail::line_height(font) <= cell) return font;
  }
  return std::nullopt;
}

}  // namespace

at::Tensor render_confusion(const at::Tensor& counts, const std::vector<std::string>& class_names,
                            const ConfusionOptions& options) {
  check_counts(counts, class_names);
  const int k = static_cast<int>(counts.size(0));
  const at::Tensor values = cell_values(counts, options.normalize);
  const double* v = values.data_ptr<double>();
  const double vmax = options.normalize ? 1.0 : std::max(1.0, values.max().item<double>());

  std::vector<std::string> names = class_names;
  if (names.empty()) {
    for (int i = 0; i < k; ++i)
      names.push_back(std::to_string(i));
  }
  const int cell = std::clamp(kMatrixSide / k, 1, kMaxCell);
  const int side = cell * k;
  // Names need a row each; below that, a few class-index ticks stand in.
  const bool show_names = cell >= detail::line_height(kNameFont) - 4;
  int name_width = 0;
  if (show_names) {
    for (std::string& name : names) {
      name = detail::truncate_text(name, kMaxNameWidth, kNameFont);
      name_width = std::max(name_width, detail::text_width(name, kNameFont));
    }
  }
  std::vector<double> index_ticks;
  if (!show_names) {
    index_ticks = nice_ticks(0, k - 1, std::max(2, side / 60), /*integer=*/true);
    for (double t : index_ticks) {
      name_width = std::max(name_width, detail::text_width(format_tick(t, 1), kTickFont));
    }
  }
  const int label_height = detail::line_height(kLabelFont);
  const int title_height = options.title.empty() ? 0 : detail::line_height(kTitleFont) + 8;
  const int left = kPad + label_height + 6 + name_width + 8;
  const int top = kPad + title_height;
  const int bar_left = left + side + 20;
  const int width =
      std::max(bar_left + detail::colour_bar_width(0, vmax, kBarWidth, kTickFont) + kPad,
               detail::text_width(options.title, kTitleFont) + 2 * kPad);
  const int bottom_labels = show_names ? name_width : detail::line_height(kTickFont);
  const int height = top + side + 8 + bottom_labels + 8 + label_height + kPad;
  cv::Mat canvas(height, width, CV_8UC3, detail::kWhite);

  const std::optional<Font> text_font = cell_font(values, options.normalize, cell);
  for (int r = 0; r < k; ++r) {
    for (int c = 0; c < k; ++c) {
      const double value = v[r * k + c];
      const cv::Rect rect(left + c * cell, top + r * cell, cell, cell);
      cv::rectangle(canvas, rect, blues(value / vmax), cv::FILLED);
      if (!text_font) continue;
      const cv::Scalar ink = value / vmax > 0.55 ? detail::kWhite : detail::kBlack;
      detail::put_text(canvas, cell_text(value, options.normalize), rect.x + cell / 2,
                       rect.y + (cell - detail::line_height(*text_font)) / 2 + 2, *text_font, ink,
                       Align::kCenter);
    }
  }
  cv::rectangle(canvas, {left - 1, top - 1}, {left + side, top + side}, detail::kDarkGray, 1);

  const int name_half = detail::line_height(kNameFont) / 2;
  // Names run down the left and, turned, along the bottom; index ticks are
  // short enough to stay level.
  auto label_class = [&](int i, const std::string& text, const Font& font, bool turn) {
    const int center = i * cell + cell / 2;
    detail::put_text(canvas, text, left - 6, top + center - name_half + 1, font, detail::kBlack,
                     Align::kRight);
    if (turn) {
      detail::put_text_vertical(canvas, text, left + center,
                                top + side + 6 + detail::text_width(text, font) / 2, font,
                                detail::kBlack);
    } else {
      detail::put_text(canvas, text, left + center, top + side + 6, font, detail::kBlack,
                       Align::kCenter);
    }
  };
  if (show_names) {
    for (int i = 0; i < k; ++i)
      label_class(i, names[i], kNameFont, /*turn=*/true);
  } else {
    for (double t : index_ticks) {
      label_class(static_cast<int>(t), format_tick(t, 1), kTickFont, /*turn=*/false);
    }
  }

  if (!options.title.empty()) {
    detail::put_text(canvas, options.title, width / 2, kPad, kTitleFont, detail::kBlack,
                     Align::kCenter);
  }
  detail::put_text(canvas, "predicted", left + side / 2, top + side + 8 + bottom_labels + 8,
                   kLabelFont, detail::kBlack, Align::kCenter);
  detail::put_text_vertical(canvas, "true", kPad + label_height / 2, top + side / 2, kLabelFont,
                            detail::kBlack);

  // Colour bar: the scale from 0 (bottom) to vmax (top), with round ticks.
  detail::draw_colour_bar(canvas, {bar_left, top, kBarWidth, side}, 0, vmax, blues, kTickFont);
  return detail::from_mat(canvas);
}

}  // namespace vit::io
