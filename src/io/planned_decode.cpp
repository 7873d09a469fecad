// The plan comes from data/image_transform (torchvision's RandomResizedCrop, or
// timm's resize-and-centre-crop). A JPEG whose header gives its size is decoded at
// a reduced scale through libjpeg's DCT scaling (OpenCV's IMREAD_REDUCED_*) when the
// resize averages areas, so that it still only shrinks (INTER_AREA, which
// antialiases); that skips most of the decoding of a photograph much larger than the
// model's input. Pillow's filters (pil_resize) get the whole-scale pixels Pillow
// would. The thread's kept bytes are a JPEG region's rows.
#include "vit/io/planned_decode.hpp"

#include <algorithm>
#include <cmath>

#include <torch/torch.h>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include "image_size.hpp"
#include "jpeg_region.hpp"
#include "mat.hpp"
#include "pil_resize.hpp"
#include "vit/error.hpp"
#include "vit/io/jpeg_header.hpp"

namespace vit::io {
namespace {

constexpr int64_t kMaxOutSide = 16384;  // as image_io's: far above any model input

int reduced_color_flag(int denominator) {
  switch (denominator) {
    case 2:
      return cv::IMREAD_REDUCED_COLOR_2;
    case 4:
      return cv::IMREAD_REDUCED_COLOR_4;
    case 8:
      return cv::IMREAD_REDUCED_COLOR_8;
    default:
      return cv::IMREAD_COLOR;
  }
}

std::string box_text(int64_t top, int64_t left, int64_t height, int64_t width) {
  return std::to_string(height) + "x" + std::to_string(width) + " at (" + std::to_string(top) +
         ", " + std::to_string(left) + ")";
}

void check_plan(const CropResizePlan& p, int64_t height, int64_t width, const std::string& name) {
  const bool box_inside = p.height > 0 && p.width > 0 && p.top >= 0 && p.left >= 0 &&
                          p.top + p.height <= height && p.left + p.width <= width;
  if (!box_inside)
    throw Error(name + ": the crop " + box_text(p.top, p.left, p.height, p.width) +
                " is not inside the " + std::to_string(height) + "x" + std::to_string(width) +
                " image");
  const bool out_ok = p.out_height > 0 && p.out_width > 0 && p.out_height <= kMaxOutSide &&
                      p.out_width <= kMaxOutSide;
  if (!out_ok)
    throw Error(name + ": cannot resize a crop to " + std::to_string(p.out_height) + "x" +
                std::to_string(p.out_width) + ", expected 1.." + std::to_string(kMaxOutSide) +
                " pixels a side");
  const bool whole = p.crop_height == 0 && p.crop_width == 0;
  const bool window_inside =
      whole ||
      (p.crop_height > 0 && p.crop_width > 0 && p.crop_top >= 0 && p.crop_left >= 0 &&
       p.crop_top + p.crop_height <= p.out_height && p.crop_left + p.crop_width <= p.out_width);
  if (!window_inside)
    throw Error(name + ": the window " +
                box_text(p.crop_top, p.crop_left, p.crop_height, p.crop_width) +
                " is not inside the resized " + std::to_string(p.out_height) + "x" +
                std::to_string(p.out_width) + " crop");
}

// The plan's box in a decoded image that is `scale_y`, `scale_x` times the
// size the plan was made for (a DCT-scaled decode), rows x cols in all, of
// which `image` holds the part from (x0, y0) on: rounded outwards and
// clamped to `image`, never empty.
cv::Rect scaled_box(const CropResizePlan& p, double scale_y, double scale_x, const cv::Mat& image,
                    int x0 = 0, int y0 = 0) {
  const auto lo = [](double v) { return static_cast<int>(std::floor(v + 1e-9)); };
  const auto hi = [](double v) { return static_cast<int>(std::ceil(v - 1e-9)); };
  const int top = std::clamp(lo(double(p.top) * scale_y) - y0, 0, image.rows - 1);
  const int left = std::clamp(lo(double(p.left) * scale_x) - x0, 0, image.cols - 1);
  const int bottom = std::clamp(hi(double(p.top + p.height) * scale_y) - y0, top + 1, image.rows);
  const int right = std::clamp(hi(double(p.left + p.width) * scale_x) - x0, left + 1, image.cols);
  return {left, top, right - left, bottom - top};
}

cv::Mat resized_box(const cv::Mat& box, const CropResizePlan& p) {
  const int height = static_cast<int>(p.out_height), width = static_cast<int>(p.out_width);
  if (p.interpolation != Interpolation::kArea)
    return detail::pil_resize(box, height, width,
                              p.interpolation == Interpolation::kBicubic
                                  ? detail::PilFilter::kBicubic
                                  : detail::PilFilter::kBilinear);
  const bool shrinks = height <= box.rows && width <= box.cols;
  cv::Mat resized;
  cv::resize(box, resized, cv::Size(width, height), 0, 0,
             shrinks ? cv::INTER_AREA : cv::INTER_LINEAR);
  return resized;
}

// The plan's resize and window on `box`, then the channel conversion (to RGB
// or luma, 8 bits) on the small result, not on the whole image; Pillow's
// filters convert first, as torchvision's loader does. `rgb`: the pixels are
// RGB or gray already (libjpeg's), not the BGR of OpenCV's codecs.
at::Tensor finish_plan(const cv::Mat& box, int channels, const CropResizePlan& p, bool rgb) {
  const bool convert_first = !rgb && p.interpolation != Interpolation::kArea;
  const cv::Mat resized =
      resized_box(convert_first ? detail::to_uint8_channels(box, channels) : box, p);
  const bool whole = p.crop_height == 0 && p.crop_width == 0;
  const cv::Mat window =
      whole ? resized
            : resized(cv::Rect(static_cast<int>(p.crop_left), static_cast<int>(p.crop_top),
                               static_cast<int>(p.crop_width), static_cast<int>(p.crop_height)));
  const bool converted = rgb || convert_first;
  return detail::from_mat_channels_last(converted ? window
                                                  : detail::to_uint8_channels(window, channels));
}

at::Tensor apply_plan(const cv::Mat& image, int channels, const CropResizePlan& p, double scale_y,
                      double scale_x) {
  return finish_plan(image(scaled_box(p, scale_y, scale_x, image)), channels, p, /*rgb=*/false);
}

}  // namespace

int dct_scale_for(int64_t box_height, int64_t box_width, int64_t out_height, int64_t out_width) {
  for (const int denominator : {8, 4, 2})
    if (box_height >= out_height * denominator && box_width >= out_width * denominator)
      return denominator;
  return 1;
}

at::Tensor decode_planned(const uint8_t* data, size_t size, int64_t channels,
                          const PlanForSize& plan, const std::string& name) {
  if (channels != 1 && channels != 3)
    throw Error(name + ": asked for " + std::to_string(channels) +
                " channels, expected 1 (gray) or 3 (RGB)");
  const int c = static_cast<int>(channels);
  if (const auto jpeg = read_jpeg_header(data, size)) {
    detail::hold_to_caps(detail::claimed_size(*jpeg), name);  // the header read once
    const int64_t height = jpeg->oriented_height(), width = jpeg->oriented_width();
    const CropResizePlan p = plan(height, width);
    check_plan(p, height, width, name);
    const int denominator = p.interpolation == Interpolation::kArea
                                ? dct_scale_for(p.height, p.width, p.out_height, p.out_width)
                                : 1;
    if (jpeg->orientation == 1) {  // rotated ones take OpenCV's path below
      const auto region = detail::decode_jpeg_region(
          data, size, c, denominator, static_cast<int>(p.top), static_cast<int>(p.left),
          static_cast<int>(p.top + p.height), static_cast<int>(p.left + p.width), name);
      if (region) {
        const double scale_y = double(region->scaled_height) / double(height);
        const double scale_x = double(region->scaled_width) / double(width);
        const cv::Rect box =
            scaled_box(p, scale_y, scale_x, region->pixels, region->x0, region->y0);
        return finish_plan(region->pixels(box), c, p, /*rgb=*/true);
      }
    }
    // IMREAD_COLOR (reduced or not) applies the EXIF orientation, as the
    // header's oriented size assumed.
    const cv::Mat pixels = detail::decode_mat(data, size, reduced_color_flag(denominator), name);
    // libjpeg rounds a scaled side up. Any other size means the header and
    // the decoder disagree (an orientation OpenCV read elsewhere, say): then
    // the plan is made again for the pixels as decoded.
    const auto scaled = [&](int64_t side) { return (side + denominator - 1) / denominator; };
    if (pixels.rows != scaled(height) || pixels.cols != scaled(width)) {
      const CropResizePlan again = plan(pixels.rows, pixels.cols);
      check_plan(again, pixels.rows, pixels.cols, name);
      return apply_plan(pixels, c, again, 1.0, 1.0);
    }
    return apply_plan(pixels, c, p, double(pixels.rows) / double(height),
                      double(pixels.cols) / double(width));
  }
  const cv::Mat pixels =
      detail::decode_mat(data, size, cv::IMREAD_ANYDEPTH | cv::IMREAD_ANYCOLOR, name);
  const CropResizePlan p = plan(pixels.rows, pixels.cols);
  check_plan(p, pixels.rows, pixels.cols, name);
  return apply_plan(pixels, c, p, 1.0, 1.0);
}

size_t kept_decode_bytes() {
  return detail::kept_region_bytes();
}

}  // namespace vit::io
