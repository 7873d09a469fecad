// Pillow's 8-bit resampling (libImaging/Resample.c) done again, so that a model
// evaluated here sees the pixels its timm recipe saw: the same taps, the same
// rounding of the weights, the same order of the two passes. Pillow works on
// 4-byte pixels; per channel the sums are the same.
#include "pil_resize.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "vit/error.hpp"

namespace vit::io::detail {
namespace {

constexpr int kPrecisionBits = 32 - 8 - 2;  // 8 bits of pixel, 2 of headroom for negative lobes

double bilinear(double x) {
  x = std::abs(x);
  return x < 1.0 ? 1.0 - x : 0.0;
}

double bicubic(double x) {  // Keys' cubic with a = -0.5
  constexpr double a = -0.5;
  x = std::abs(x);
  if (x < 1.0) return ((a + 2.0) * x - (a + 3.0)) * x * x + 1.0;
  if (x < 2.0) return (((x - 5.0) * x + 8.0) * x - 4.0) * a;
  return 0.0;
}

// One axis: for each output pixel, the first input pixel it reads, how many,
// and their weights in fixed point (row i's at weights[i * stride]).
struct Taps {
  std::vector<int> first, count;
  std::vector<int32_t> weights;
  int stride = 0;
};

Taps taps_for(int in_size, int out_size, PilFilter filter) {
  const double scale = double(in_size) / double(out_size);
  const double widening = std::max(scale, 1.0);  // a shrink widens the filter
  const double support = (filter == PilFilter::kBicubic ? 2.0 : 1.0) * widening;
  // Times the reciprocal, as Pillow computes it: a division can round the other
  // way in the last bit, and a weight's 22-bit rounding with it.
  const double narrowing = 1.0 / widening;
  const auto kernel = filter == PilFilter::kBicubic ? bicubic : bilinear;
  Taps t;
  t.stride = static_cast<int>(std::ceil(support)) * 2 + 1;
  t.first.resize(out_size);
  t.count.resize(out_size);
  t.weights.assign(size_t(out_size) * size_t(t.stride), 0);
  std::vector<double> w(t.stride);
  for (int i = 0; i < out_size; ++i) {
    const double center = (i + 0.5) * scale;
    // Truncation toward zero, as Pillow's (int) casts round.
    const int low = std::max(static_cast<int>(center - support + 0.5), 0);
    const int high = std::min(static_cast<int>(center + support + 0.5), in_size);
    const int n = high - low;
    double sum = 0.0;
    for (int k = 0; k < n; ++k)
      sum += w[k] = kernel((k + low - center + 0.5) * narrowing);
    for (int k = 0; k < n; ++k) {
      const double v = (sum != 0.0 ? w[k] / sum : w[k]) * double(1 << kPrecisionBits);
      t.weights[size_t(i) * t.stride + k] = static_cast<int32_t>(v < 0 ? v - 0.5 : v + 0.5);
    }
    t.first[i] = low;
    t.count[i] = n;
  }
  return t;
}

uint8_t clip8(int32_t sum) {
  return static_cast<uint8_t>(std::clamp(sum >> kPrecisionBits, 0, 255));
}

constexpr int32_t kHalf = 1 << (kPrecisionBits - 1);

// Rows [first_row, first_row + out.rows) of `in`, resized along x into `out`.
void horizontal(const cv::Mat& in, int first_row, const Taps& t, cv::Mat& out) {
  const int channels = in.channels();
  for (int y = 0; y < out.rows; ++y) {
    const uint8_t* row = in.ptr<uint8_t>(first_row + y);
    uint8_t* to = out.ptr<uint8_t>(y);
    for (int x = 0; x < out.cols; ++x) {
      const int32_t* k = &t.weights[size_t(x) * t.stride];
      const uint8_t* from = row + size_t(t.first[x]) * channels;
      for (int c = 0; c < channels; ++c) {
        int32_t sum = kHalf;
        for (int j = 0; j < t.count[x]; ++j)
          sum += int32_t(from[j * channels + c]) * k[j];
        to[x * channels + c] = clip8(sum);
      }
    }
  }
}

// `in` resized along y into `out`, the taps' first rows counted from `offset`.
// Row by row, so that the inner loop runs along a row and vectorises.
void vertical(const cv::Mat& in, int offset, const Taps& t, cv::Mat& out) {
  const int values = in.cols * in.channels();
  std::vector<int32_t> sums(values);
  for (int y = 0; y < out.rows; ++y) {
    std::fill(sums.begin(), sums.end(), kHalf);
    const int32_t* k = &t.weights[size_t(y) * t.stride];
    for (int j = 0; j < t.count[y]; ++j) {
      const uint8_t* from = in.ptr<uint8_t>(t.first[y] - offset + j);
      const int32_t weight = k[j];
      for (int v = 0; v < values; ++v)
        sums[v] += int32_t(from[v]) * weight;
    }
    uint8_t* to = out.ptr<uint8_t>(y);
    for (int v = 0; v < values; ++v)
      to[v] = clip8(sums[v]);
  }
}

}  // namespace

// Pillow 13 runs the vertical pass first when the height shrinks by more than
// twice as many pixels as the width; earlier Pillows always ran the horizontal
// pass first. The order changes the 8-bit rounding between the passes, so this
// follows the current Pillow; the two agree for any aspect-keeping resize of an
// image less than twice as tall as wide.
bool vertical_first(const cv::Mat& image, int height, int width) {
  const int rows_lost = image.rows - height, cols_lost = image.cols - width;
  return rows_lost > 0 && rows_lost > 2 * cols_lost;
}

cv::Mat pil_resize(const cv::Mat& image, int height, int width, PilFilter filter) {
  if (image.depth() != CV_8U || image.empty() || height <= 0 || width <= 0)
    throw Error("pil_resize: expected a non-empty 8-bit image and a positive size");
  const bool along_x = width != image.cols, along_y = height != image.rows;
  if (!along_x && !along_y) return image.clone();
  const int type = image.type();
  if (!along_x || (along_y && vertical_first(image, height, width))) {
    cv::Mat rows(height, image.cols, type);
    vertical(image, 0, taps_for(image.rows, height, filter), rows);
    if (!along_x) return rows;
    cv::Mat out(height, width, type);
    horizontal(rows, 0, taps_for(image.cols, width, filter), out);
    return out;
  }
  // Horizontal first, on only the rows the vertical pass will read.
  const Taps rows_taps = taps_for(image.rows, height, filter);
  const int first = along_y ? rows_taps.first.front() : 0;
  const int end = along_y ? rows_taps.first.back() + rows_taps.count.back() : image.rows;
  cv::Mat columns(end - first, width, type);
  horizontal(image, first, taps_for(image.cols, width, filter), columns);
  if (!along_y) return columns;
  cv::Mat out(height, width, type);
  vertical(columns, first, rows_taps, out);
  return out;
}

}  // namespace vit::io::detail
