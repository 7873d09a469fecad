#pragma once
// Private to src/io: text, colours and small shapes shared by the grid, plot
// and confusion renderers. Canvases are CV_8UC3 in RGB order, so every
// cv::Scalar here is (R, G, B).
#include <optional>
#include <string>
#include <vector>

#include <opencv2/core.hpp>

namespace vit::io::detail {

// A Hershey font at a given scale. Thickness 1 with anti-aliasing stays crisp
// down to scale ~0.35 (about 8 px capitals).
struct Font {
  double scale = 0.5;
  int thickness = 1;
  int face = 0;  // cv::FONT_HERSHEY_SIMPLEX
};

// The figures' type sizes: titles, axis labels and tick labels.
inline const Font kTitleFont{/*scale=*/0.6};
inline const Font kLabelFont{/*scale=*/0.5};
inline const Font kTickFont{/*scale=*/0.45};

enum class Align { kLeft, kCenter, kRight };

const cv::Scalar kBlack(0, 0, 0);
const cv::Scalar kWhite(255, 255, 255);
const cv::Scalar kDarkGray(60, 60, 60);
const cv::Scalar kLightGray(225, 225, 225);

// Width of the drawn text and the height of a line that holds it (ascent plus
// descent), in pixels.
int text_width(const std::string& text, const Font& font);
int line_height(const Font& font);

// Draws one line whose box starts at `top` (not the baseline); x is the left
// edge, centre or right edge per `align`.
void put_text(cv::Mat& canvas, const std::string& text, int x, int top, const Font& font,
              const cv::Scalar& color, Align align = Align::kLeft);

// Draws text turned 90 degrees counter-clockwise (read bottom to top), centred
// on (cx, cy); used for y-axis labels.
void put_text_vertical(cv::Mat& canvas, const std::string& text, int cx, int cy, const Font& font,
                       const cv::Scalar& color);

// Lays `text` out in at most `max_lines` lines no wider than `max_width`: first
// by shrinking the font from `font.scale` towards `min_scale`, then by wrapping
// at spaces, and last by cutting words with "..". Explicit '\n' always breaks.
// Returns the lines and sets `font` to the scale used.
std::vector<std::string> fit_text(const std::string& text, int max_width, int max_lines,
                                  double min_scale, Font& font);

// The shrink and wrap steps of fit_text alone: nullopt when the text does not
// fit without cutting.
std::optional<std::vector<std::string>> try_fit(const std::string& text, int max_width,
                                                int max_lines, double min_scale, Font& font);

// Cuts `text` with ".." until it is at most max_width wide ("" if nothing fits).
std::string truncate_text(const std::string& text, int max_width, const Font& font);

// Matplotlib's tab10 qualitative palette, cycling.
cv::Scalar palette_color(int index);

// Filled marker: 0 circle, 1 square, 2 triangle, 3 diamond (cycling).
void draw_marker(cv::Mat& canvas, cv::Point2d center, int shape, int radius,
                 const cv::Scalar& color);

}  // namespace vit::io::detail
