#include "vit/io/grid.hpp"

#include <algorithm>

#include <torch/torch.h>
#include <opencv2/imgproc.hpp>

#include "draw.hpp"
#include "mat.hpp"
#include "vit/error.hpp"

namespace vit::io {
namespace {

constexpr double kMinCaptionScale = 0.35;
constexpr double kLegibleScale = 0.42;  // captions above this read easily at arm's length
constexpr int kCaptionGap = 4;          // pixels between a tile and its caption
constexpr int kCaptionInset = 3;        // keeps neighbouring captions from touching
// The footer is our own explanation and grows to fit it (the filters figure
// needs 4 lines at 7 tiles across); past 8 lines it would be cut with "..".
constexpr int kFooterLines = 8;

struct FittedCaption {
  std::vector<std::string> lines;
  detail::Font font;
};

cv::Mat tile_picture(const at::Tensor& image, int scale, size_t index) {
  cv::Mat mat = detail::to_mat(image, "make_grid: tile " + std::to_string(index));
  if (mat.channels() == 1) cv::cvtColor(mat, mat, cv::COLOR_GRAY2RGB);
  if (scale > 1) cv::resize(mat, mat, {}, scale, scale, cv::INTER_NEAREST);
  return mat;
}

struct CaptionPlan {
  int cell_width = 0;
  int lines = 0;  // the most lines any caption takes
  std::vector<FittedCaption> captions;
};

bool all_legible(const std::vector<Tile>& tiles, int width, int max_lines,
                 const detail::Font& font) {
  return std::all_of(tiles.begin(), tiles.end(), [&](const Tile& tile) {
    detail::Font trial = font;
    return tile.caption.empty() ||
           detail::try_fit(tile.caption, width - 2 * kCaptionInset, max_lines, kLegibleScale, trial)
               .has_value();
  });
}

// Cells may grow up to 1.5x their picture so that long captions stay at a
// legible size; then all captions share the smallest scale any of them needs
// (down to kLegibleScale), so the grid reads evenly. Only captions that fit no
// other way are shrunk further or cut.
CaptionPlan plan_captions(const std::vector<Tile>& tiles, int picture_width, int max_lines,
                          const detail::Font& font) {
  CaptionPlan plan;
  const int widest = picture_width * 3 / 2;
  plan.cell_width = picture_width;
  while (plan.cell_width < widest && !all_legible(tiles, plan.cell_width, max_lines, font)) {
    plan.cell_width = std::min(widest, plan.cell_width + 8);
  }
  double common = font.scale;
  for (const Tile& tile : tiles) {
    detail::Font trial = font;
    if (!tile.caption.empty() && detail::try_fit(tile.caption, plan.cell_width - 2 * kCaptionInset,
                                                 max_lines, kLegibleScale, trial)) {
      common = std::min(common, trial.scale);
    }
  }
  for (const Tile& tile : tiles) {
    FittedCaption fitted{{}, detail::Font{common, font.thickness, font.face}};
    if (!tile.caption.empty()) {
      fitted.lines = detail::fit_text(tile.caption, plan.cell_width - 2 * kCaptionInset, max_lines,
                                      kMinCaptionScale, fitted.font);
    }
    plan.lines = std::max(plan.lines, static_cast<int>(fitted.lines.size()));
    plan.captions.push_back(std::move(fitted));
  }
  return plan;
}

}  // namespace

at::Tensor make_grid(const std::vector<Tile>& tiles, const GridOptions& options) {
  const int margin = static_cast<int>(std::clamp<int64_t>(options.margin, 0, 200));
  detail::Font title_font{/*scale=*/0.6, /*thickness=*/1};
  const int title_height = options.title.empty() ? 0 : detail::line_height(title_font) + margin;

  // The largest tile sets the cell; one whole enlargement factor for all keeps
  // pixels the same size everywhere in the picture.
  int max_height = 0;
  int max_width = 0;
  for (size_t i = 0; i < tiles.size(); ++i) {
    detail::check_image(tiles[i].image, "make_grid: tile " + std::to_string(i));
    max_height = std::max(max_height, static_cast<int>(tiles[i].image.size(1)));
    max_width = std::max(max_width, static_cast<int>(tiles[i].image.size(2)));
  }
  const int shorter = std::min(max_height, max_width);
  const int min_side = static_cast<int>(std::clamp<int64_t>(options.min_tile_side, 1, 4096));
  const int scale = shorter > 0 && shorter < min_side ? (min_side + shorter - 1) / shorter : 1;
  const int cell_height = max_height * scale;
  const detail::Font caption_font{/*scale=*/std::clamp(options.font_scale, kMinCaptionScale, 3.0)};
  const int max_lines = static_cast<int>(std::clamp<int64_t>(options.caption_lines, 1, 10));
  const CaptionPlan plan =
      plan_captions(tiles, std::max(max_width * scale, 16), max_lines, caption_font);
  const int cell_width = plan.cell_width;
  const int line_height = detail::line_height(caption_font);
  const int caption_height = plan.lines > 0 ? kCaptionGap + plan.lines * line_height : 0;

  const int count = static_cast<int>(tiles.size());
  const int columns = std::max(
      1, std::min(static_cast<int>(std::max<int64_t>(options.columns, 1)), std::max(count, 1)));
  const int rows = (count + columns - 1) / columns;
  const int row_height = cell_height + caption_height + margin;
  const int width = std::max(margin + columns * (cell_width + margin),
                             detail::text_width(options.title, title_font) + 2 * margin);
  const int grid_bottom = margin + title_height + rows * row_height;
  detail::Font footer_font{/*scale=*/0.45};
  const std::vector<std::string> footer =
      options.footer.empty() ? std::vector<std::string>{}
                             : detail::fit_text(options.footer, std::max(width - 2 * margin, 16),
                                                kFooterLines, kMinCaptionScale, footer_font);
  const int footer_height = static_cast<int>(footer.size()) * detail::line_height(footer_font);
  const int height =
      std::max(grid_bottom + (footer.empty() ? 0 : footer_height + margin), 2 * margin + 1);
  cv::Mat canvas(height, width, CV_8UC3, detail::kWhite);
  int footer_top = grid_bottom;
  for (const std::string& line : footer) {
    detail::put_text(canvas, line, margin, footer_top, footer_font, detail::kDarkGray);
    footer_top += detail::line_height(footer_font);
  }

  if (!options.title.empty()) {
    detail::put_text(canvas, options.title, width / 2, margin, title_font, detail::kBlack,
                     detail::Align::kCenter);
  }
  for (int i = 0; i < count; ++i) {
    const int left = margin + (i % columns) * (cell_width + margin);
    const int top = margin + title_height + (i / columns) * row_height;
    const cv::Mat picture = tile_picture(tiles[i].image, scale, i);
    picture.copyTo(
        canvas(cv::Rect(left + (cell_width - picture.cols) / 2,
                        top + (cell_height - picture.rows) / 2, picture.cols, picture.rows)));
    const std::array<uint8_t, 3>& rgb = tiles[i].color;
    const cv::Scalar color(rgb[0], rgb[1], rgb[2]);
    int line_top = top + cell_height + kCaptionGap;
    for (const std::string& line : plan.captions[i].lines) {
      detail::put_text(canvas, line, left + cell_width / 2, line_top, plan.captions[i].font, color,
                       detail::Align::kCenter);
      line_top += detail::line_height(plan.captions[i].font);
    }
  }
  return detail::from_mat(canvas);
}

}  // namespace vit::io
