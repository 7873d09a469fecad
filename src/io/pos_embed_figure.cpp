// Shape key: g grid side, P = g*g patches.
#include "vit/io/pos_embed_figure.hpp"

#include <algorithm>
#include <cmath>

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
using detail::Font;
using detail::kLabelFont;
using detail::kTickFont;
using detail::kTitleFont;

const Font kCaptionFont{/*scale=*/0.45};
constexpr int kPosEmbedPad = 14;
constexpr int kTilesSide = 600;  // target pixels of the whole grid of tiles
constexpr int kPosEmbedMaxCell = 40;
constexpr int kPosEmbedBarWidth = 18;
constexpr double kLow = -1.0, kHigh = 1.0;  // cosine range, fixed so pictures compare

int64_t grid_side(const at::Tensor& similarity) {
  const bool square = similarity.defined() && similarity.dim() == 2 &&
                      similarity.size(0) == similarity.size(1) && similarity.size(0) > 0;
  const int64_t g =
      square ? static_cast<int64_t>(std::llround(std::sqrt(double(similarity.size(0))))) : 0;
  if (!square || g * g != similarity.size(0))
    throw Error("render_pos_embed_similarity: similarity is " +
                (similarity.defined() ? c10::str(similarity.sizes()) : std::string("undefined")) +
                ", expected a (g*g, g*g) matrix");
  return g;
}

// Tile numbers 1..g along an axis: all of them while they fit, else round ones.
std::vector<int> tile_labels(int g, int tile) {
  std::vector<int> labels;
  if (tile >= detail::text_width(std::to_string(g), kTickFont) + 4) {
    for (int i = 1; i <= g; ++i)
      labels.push_back(i);
    return labels;
  }
  for (double t : nice_ticks(1, g, std::max(2, g * tile / 50), /*integer=*/true))
    labels.push_back(static_cast<int>(t));
  return labels;
}

}  // namespace

at::Tensor render_pos_embed_similarity(const at::Tensor& similarity,
                                       const PosEmbedFigureOptions& options) {
  const int g = static_cast<int>(grid_side(similarity));
  const at::Tensor values =
      similarity.detach().to(torch::kCPU, torch::kDouble).nan_to_num(0.0).contiguous();
  const double* v = values.data_ptr<double>();
  const int cell = std::clamp(kTilesSide / (g * g), 1, kPosEmbedMaxCell);
  const int tile = cell * g;
  const int gap = tile >= 24 ? 4 : 2;
  const int side = g * tile + (g - 1) * gap;

  const int label_height = detail::line_height(kLabelFont);
  const int tick_height = detail::line_height(kTickFont);
  const int tick_width = detail::text_width(std::to_string(g), kTickFont);
  const int title_height = options.title.empty() ? 0 : detail::line_height(kTitleFont) + 10;
  const int left = kPosEmbedPad + label_height + 8 + tick_width + 8;
  const int top = kPosEmbedPad + title_height;
  const int bar_left = left + side + 24;
  const int bar_label =
      bar_left + detail::colour_bar_width(kLow, kHigh, kPosEmbedBarWidth, kTickFont) + 10;
  const int width = std::max(bar_label + label_height + kPosEmbedPad,
                             detail::text_width(options.title, kTitleFont) + 2 * kPosEmbedPad);
  Font caption_font = kCaptionFont;
  const std::vector<std::string> caption =
      options.caption.empty()
          ? std::vector<std::string>{}
          : detail::fit_text(options.caption, width - 2 * kPosEmbedPad, /*max_lines=*/3,
                             /*min_scale=*/0.35, caption_font);
  const int caption_height = static_cast<int>(caption.size()) * detail::line_height(caption_font);
  const int below = top + side + 6 + tick_height + 6 + label_height;
  const int height = below + (caption.empty() ? 0 : 10 + caption_height) + kPosEmbedPad;
  cv::Mat canvas(height, width, CV_8UC3, detail::kWhite);

  // Tile (r, c) is row r*g + c of the matrix: patch (r, c) against every patch.
  for (int r = 0; r < g; ++r)
    for (int c = 0; c < g; ++c) {
      const int x0 = left + c * (tile + gap), y0 = top + r * (tile + gap);
      const double* row = v + static_cast<int64_t>(r * g + c) * g * g;
      for (int i = 0; i < g; ++i)
        for (int j = 0; j < g; ++j) {
          const double t = (row[i * g + j] - kLow) / (kHigh - kLow);
          cv::rectangle(canvas, cv::Rect(x0 + j * cell, y0 + i * cell, cell, cell),
                        detail::viridis(t), cv::FILLED);
        }
    }

  for (int label : tile_labels(g, tile)) {
    const int center = (label - 1) * (tile + gap) + tile / 2;
    detail::put_text(canvas, std::to_string(label), left - 8, top + center - tick_height / 2 + 1,
                     kTickFont, detail::kBlack, Align::kRight);
    detail::put_text(canvas, std::to_string(label), left + center, top + side + 6, kTickFont,
                     detail::kBlack, Align::kCenter);
  }
  detail::put_text(canvas, "input patch column", left + side / 2, top + side + 6 + tick_height + 6,
                   kLabelFont, detail::kBlack, Align::kCenter);
  detail::put_text_vertical(canvas, "input patch row", kPosEmbedPad + label_height / 2,
                            top + side / 2, kLabelFont, detail::kBlack);
  if (!options.title.empty())
    detail::put_text(canvas, options.title, width / 2, kPosEmbedPad, kTitleFont, detail::kBlack,
                     Align::kCenter);

  detail::draw_colour_bar(canvas, {bar_left, top, kPosEmbedBarWidth, side}, kLow, kHigh,
                          detail::viridis, kTickFont);
  detail::put_text_vertical(canvas, "cosine similarity", bar_label + label_height / 2,
                            top + side / 2, kLabelFont, detail::kBlack);

  int y = below + 10;
  for (const std::string& line : caption) {
    detail::put_text(canvas, line, kPosEmbedPad, y, caption_font, detail::kDarkGray);
    y += detail::line_height(caption_font);
  }
  return detail::from_mat(canvas);
}

}  // namespace vit::io
