#include "draw.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <sstream>

#include <opencv2/imgproc.hpp>

namespace vit::io::detail {
namespace {

constexpr int kShift = 4;  // sub-pixel bits for shapes: markers sit at fractional x
constexpr double kOne = 1 << kShift;

cv::Point fixed_point(double x, double y) {
  return {static_cast<int>(std::lround(x * kOne)), static_cast<int>(std::lround(y * kOne))};
}

int ascent(const Font& font) {
  int baseline = 0;
  return cv::getTextSize("H", font.face, font.scale, font.thickness, &baseline).height;
}

std::vector<std::string> split(const std::string& text, char separator) {
  std::vector<std::string> parts;
  std::stringstream stream(text);
  std::string part;
  while (std::getline(stream, part, separator))
    parts.push_back(part);
  if (parts.empty()) parts.push_back("");
  return parts;
}

// Greedy word wrap of each line; a single word wider than max_width stays whole.
std::vector<std::string> wrap(const std::vector<std::string>& lines, int max_width,
                              const Font& font) {
  std::vector<std::string> wrapped;
  for (const std::string& line : lines) {
    std::string current;
    for (const std::string& word : split(line, ' ')) {
      if (word.empty()) continue;
      const std::string candidate = current.empty() ? word : current + " " + word;
      if (!current.empty() && text_width(candidate, font) > max_width) {
        wrapped.push_back(current);
        current = word;
      } else {
        current = candidate;
      }
    }
    wrapped.push_back(current);
  }
  return wrapped;
}

bool all_fit(const std::vector<std::string>& lines, int max_width, int max_lines,
             const Font& font) {
  if (static_cast<int>(lines.size()) > max_lines) return false;
  return std::all_of(lines.begin(), lines.end(),
                     [&](const std::string& line) { return text_width(line, font) <= max_width; });
}

}  // namespace

int text_width(const std::string& text, const Font& font) {
  int baseline = 0;
  return cv::getTextSize(text, font.face, font.scale, font.thickness, &baseline).width;
}

int line_height(const Font& font) {
  int baseline = 0;
  const cv::Size size = cv::getTextSize("Hg", font.face, font.scale, font.thickness, &baseline);
  return size.height + baseline + std::max(2, static_cast<int>(std::lround(6 * font.scale)));
}

void put_text(cv::Mat& canvas, const std::string& text, int x, int top, const Font& font,
              const cv::Scalar& color, Align align) {
  const int width = text_width(text, font);
  if (align == Align::kCenter) x -= width / 2;
  if (align == Align::kRight) x -= width;
  cv::putText(canvas, text, {x, top + ascent(font)}, font.face, font.scale, color, font.thickness,
              cv::LINE_AA);
}

void put_text_vertical(cv::Mat& canvas, const std::string& text, int cx, int cy, const Font& font,
                       const cv::Scalar& color) {
  // Draw into a coverage mask, turn it, and blend it in with the colour.
  const int width = text_width(text, font) + 2;
  const int height = line_height(font);
  cv::Mat coverage(height, width, CV_8UC1, cv::Scalar(0));
  cv::putText(coverage, text, {1, 1 + ascent(font)}, font.face, font.scale, cv::Scalar(255),
              font.thickness, cv::LINE_AA);
  cv::rotate(coverage, coverage, cv::ROTATE_90_COUNTERCLOCKWISE);  // (width, height)
  const int left = cx - coverage.cols / 2;
  const int top = cy - coverage.rows / 2;
  for (int r = 0; r < coverage.rows; ++r) {
    const int y = top + r;
    if (y < 0 || y >= canvas.rows) continue;
    for (int c = 0; c < coverage.cols; ++c) {
      const int x = left + c;
      if (x < 0 || x >= canvas.cols) continue;
      const double alpha = coverage.at<uint8_t>(r, c) / 255.0;
      if (alpha == 0.0) continue;
      cv::Vec3b& pixel = canvas.at<cv::Vec3b>(y, x);
      for (int k = 0; k < 3; ++k) {
        pixel[k] = cv::saturate_cast<uint8_t>(pixel[k] * (1.0 - alpha) + color[k] * alpha);
      }
    }
  }
}

std::string truncate_text(const std::string& text, int max_width, const Font& font) {
  if (text_width(text, font) <= max_width) return text;
  std::string kept = text;
  while (!kept.empty()) {
    kept.pop_back();
    if (text_width(kept + "..", font) <= max_width) return kept + "..";
  }
  return "";
}

std::optional<std::vector<std::string>> try_fit(const std::string& text, int max_width,
                                                int max_lines, double min_scale, Font& font) {
  max_lines = std::max(1, max_lines);
  const std::vector<std::string> lines = split(text, '\n');
  Font trial = font;
  // A larger wrapped font reads better than a tiny single line, so each scale
  // tries the text as given, then wrapped, before shrinking further.
  for (double scale = font.scale; scale >= min_scale - 1e-9; scale -= 0.05) {
    trial.scale = scale;
    if (all_fit(lines, max_width, max_lines, trial)) {
      font = trial;
      return lines;
    }
    std::vector<std::string> wrapped = wrap(lines, max_width, trial);
    if (all_fit(wrapped, max_width, max_lines, trial)) {
      font = trial;
      return wrapped;
    }
  }
  return std::nullopt;
}

std::vector<std::string> fit_text(const std::string& text, int max_width, int max_lines,
                                  double min_scale, Font& font) {
  max_lines = std::max(1, max_lines);
  if (auto lines = try_fit(text, max_width, max_lines, min_scale, font)) return *lines;
  Font trial = font;
  trial.scale = std::min(font.scale, min_scale);
  std::vector<std::string> wrapped = wrap(split(text, '\n'), max_width, trial);
  if (static_cast<int>(wrapped.size()) > max_lines) {
    wrapped.resize(max_lines);
    wrapped.back() += "..";  // marks that lines were dropped; truncation keeps it visible
  }
  for (std::string& line : wrapped) {
    const bool cut = line.size() >= 2 && line.compare(line.size() - 2, 2, "..") == 0;
    if (cut && text_width(line, trial) > max_width) line.resize(line.size() - 2);
    line = truncate_text(line, max_width, trial);
  }
  font = trial;
  return wrapped;
}

cv::Scalar palette_color(int index) {
  static const std::array<cv::Scalar, 10> kTab10 = {
      cv::Scalar(31, 119, 180),  cv::Scalar(255, 127, 14),  cv::Scalar(44, 160, 44),
      cv::Scalar(214, 39, 40),   cv::Scalar(148, 103, 189), cv::Scalar(140, 86, 75),
      cv::Scalar(227, 119, 194), cv::Scalar(127, 127, 127), cv::Scalar(188, 189, 34),
      cv::Scalar(23, 190, 207)};
  const int n = static_cast<int>(kTab10.size());
  return kTab10[((index % n) + n) % n];
}

void draw_marker(cv::Mat& canvas, cv::Point2d center, int shape, int radius,
                 const cv::Scalar& color) {
  const double r = radius;
  const double x = center.x;
  const double y = center.y;
  switch (((shape % 4) + 4) % 4) {
    case 0:
      cv::circle(canvas, fixed_point(x, y), static_cast<int>(r * kOne), color, cv::FILLED,
                 cv::LINE_AA, kShift);
      return;
    case 1: {
      const double h = r * 0.9;  // a square looks bigger than a circle of the same radius
      const std::vector<cv::Point> square = {fixed_point(x - h, y - h), fixed_point(x + h, y - h),
                                             fixed_point(x + h, y + h), fixed_point(x - h, y + h)};
      cv::fillConvexPoly(canvas, square, color, cv::LINE_AA, kShift);
      return;
    }
    case 2: {
      const double h = r * 1.2;
      const std::vector<cv::Point> triangle = {fixed_point(x, y - h),
                                               fixed_point(x + h * 0.87, y + h * 0.5),
                                               fixed_point(x - h * 0.87, y + h * 0.5)};
      cv::fillConvexPoly(canvas, triangle, color, cv::LINE_AA, kShift);
      return;
    }
    default: {
      const double h = r * 1.25;
      const std::vector<cv::Point> diamond = {fixed_point(x, y - h), fixed_point(x + h, y),
                                              fixed_point(x, y + h), fixed_point(x - h, y)};
      cv::fillConvexPoly(canvas, diamond, color, cv::LINE_AA, kShift);
      return;
    }
  }
}

}  // namespace vit::io::detail
