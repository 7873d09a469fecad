#pragma once
// Private to src/io: a region of a JPEG decoded with libjpeg-turbo's partial
// decoding, for io/planned_decode, straight into RGB (or gray: JPEG's own luma)
// rows in a buffer that each thread keeps.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include <opencv2/core.hpp>

namespace vit::io::detail {

struct JpegRegion {
  cv::Mat pixels;  // 8-bit RGB (CV_8UC3) or gray (CV_8UC1): the decoded rows, possibly wider
  int x0 = 0;      // and taller than asked: the region's corner in the scaled image
  int y0 = 0;
  int scaled_width = 0;  // the whole image's size at this scale
  int scaled_height = 0;
};

// Rows [top, bottom) and columns [left, right) of the stored (not EXIF rotated)
// image, in full-size pixels, decoded at 1/denominator (1, 2, 4 or 8). nullopt for
// CMYK and YCCK. Throws vit::Error naming `name` for a corrupt or truncated file.
// `pixels` points into a buffer of the calling thread, valid until its next call.
std::optional<JpegRegion> decode_jpeg_region(const uint8_t* data, size_t size, int channels,
                                             int denominator, int top, int left, int bottom,
                                             int right, const std::string& name);

// The bytes the calling thread keeps: at most 16 MiB after a region that needed no
// more, whatever came before it.
size_t kept_region_bytes();

}  // namespace vit::io::detail
