#pragma once
// Private to src/io: Pillow's Image.resize for 8-bit images, to the bit. timm's
// and torchvision's evaluation transforms resize with it (PIL's BILINEAR or
// BICUBIC); OpenCV's INTER_LINEAR and INTER_CUBIC take the nearest 2 or 4 pixels
// whatever the scale, so they alias when they shrink, where PIL widens the filter.
#include <opencv2/core.hpp>

namespace vit::io::detail {

enum class PilFilter { kBilinear, kBicubic };

// `image` (CV_8UC1..4, any stride) resized to height x width as Pillow does it:
// the filter's support widened by the shrink factor, weights in 22-bit fixed
// point, a horizontal pass into 8 bits and then a vertical one.
cv::Mat pil_resize(const cv::Mat& image, int height, int width, PilFilter filter);

}  // namespace vit::io::detail
