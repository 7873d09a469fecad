#pragma once
// Private to src/io: text, colours and small shapes shared by the renderers.
// Canvases are CV_8UC3 in RGB order, so every cv::Scalar here is (R, G, B).
#include <optional>
#include <string>
#include <vector>

#include <opencv2/core.hpp>

namespace vit::io::detail {

// A Hershey font; thickness 1 with anti-aliasing stays crisp down to scale ~0.35.
struct Font {
  double scale = 0.5;
  int thickness = 1;
  int face = 0;  // cv::FONT_HERSHEY_SIMPLEX
};

inline const Font kTitleFont{/*scale=*/0.6};
inline const Font kLabelFont{/*scale=*/0.5};
inline const Font kTickFont{/*scale=*/0.45};

enum class Align { kLeft, kCenter, kRight };

const cv::Scalar kBlack(0, 0, 0);
const cv::Scalar kWhite(255, 255, 255);
const cv::Scalar kDarkGray(60, 60, 60);
const cv::Scalar kLightGray(225, 225, 225);

// In pixels; a line's height is its ascent plus descent.
int text_width(const std::string& text, const Font& font);
int line_height(const Font& font);

// One line whose box starts at `top` (not the baseline); x per `align`.
void put_text(cv::Mat& canvas, const std::string& text, int x, int top, const Font& font,
              const cv::Scalar& color, Align align = Align::kLeft);

// Text turned 90 degrees counter-clockwise, centred on (cx, cy): y-axis labels.
void put_text_vertical(cv::Mat& canvas, const std::string& text, int cx, int cy, const Font& font,
                       const cv::Scalar& color);

// Lays `text` out in at most `max_lines` lines no wider than `max_width`: shrinking
// the font towards `min_scale`, then wrapping at spaces, last cutting words with
// "..". '\n' always breaks. Returns the lines and sets `font` to the scale used.
std::vector<std::string> fit_text(const std::string& text, int max_width, int max_lines,
                                  double min_scale, Font& font);

// fit_text without cutting: nullopt when the text does not fit.
std::optional<std::vector<std::string>> try_fit(const std::string& text, int max_width,
                                                int max_lines, double min_scale, Font& font);

// Cuts `text` with ".." until it is at most max_width wide ("" if nothing fits).
std::string truncate_text(const std::string& text, int max_width, const Font& font);

cv::Scalar palette_color(int index);  // Matplotlib's tab10, cycling

// Filled marker: 0 circle, 1 square, 2 triangle, 3 diamond (cycling).
void draw_marker(cv::Mat& canvas, cv::Point2d center, int shape, int radius,
                 const cv::Scalar& color);

}  // namespace vit::io::detail
