// OpenCV (4.6) decodes the whole image and then swaps it to BGR in a scalar loop;
// for a random resized crop of a photograph, most of that work is thrown away. Here
// libjpeg skips the rows above and below the region (jpeg_skip_scanlines) and
// decodes only the iMCU columns it spans (jpeg_crop_scanline), at a DCT scale of
// 1/2, 1/4 or 1/8 where the crop allows.
#include "jpeg_region.hpp"

// libjpeg's header needs size_t and FILE declared first.
#include <algorithm>
#include <csetjmp>
#include <cstdio>
#include <vector>

#include <jpeglib.h>
// After jpeglib.h, which it needs: the message codes.
#include <jerror.h>

#include "vit/error.hpp"

namespace vit::io::detail {
namespace {

// libjpeg reports errors through a callback that must not return: it jumps
// back to decode_jpeg_region's setjmp, which throws once libjpeg's state is
// gone. Only trivially destructible objects live between the two.
struct ErrorManager {
  jpeg_error_mgr manager;
  std::jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
};

[[noreturn]] void on_error(j_common_ptr info) {
  auto* errors = reinterpret_cast<ErrorManager*>(info->err);
  (*info->err->format_message)(info, errors->message);
  std::longjmp(errors->jump, 1);
}

// Warnings pass quietly, but for the data running out: libjpeg would fill
// the rest of a truncated file with gray, which is a damaged image to us.
void on_message(j_common_ptr info, int level) {
  if (level == -1 && info->err->msg_code == JWRN_JPEG_EOF) on_error(info);
}

// The decoded rows of each thread: kept from image to image, as a batch's
// photographs take about the same room; after a region larger than this, the
// next that fits in it lets the big buffer go, so one huge photograph (a
// 2^28-pixel JPEG needs 768 MiB) does not stay pinned to the thread.
constexpr size_t kKeptRegionBytes = size_t{16} << 20;

std::vector<uint8_t>& region_buffer() {
  thread_local std::vector<uint8_t> buffer;
  return buffer;
}

uint8_t* region_rows(size_t bytes) {
  auto& buffer = region_buffer();
  if (bytes <= kKeptRegionBytes && buffer.capacity() > kKeptRegionBytes)
    std::vector<uint8_t>().swap(buffer);
  buffer.resize(bytes);
  return buffer.data();
}

int scaled_down(int pixels, int denominator) {
  return pixels / denominator;
}
int scaled_up(int pixels, int denominator) {
  return (pixels + denominator - 1) / denominator;
}

}  // namespace

std::optional<JpegRegion> decode_jpeg_region(const uint8_t* data, size_t size, int channels,
                                             int denominator, int top, int left, int bottom,
                                             int right, const std::string& name) {
  jpeg_decompress_struct info{};
  ErrorManager errors{};
  info.err = jpeg_std_error(&errors.manager);
  errors.manager.error_exit = on_error;
  errors.manager.emit_message = on_message;
  JpegRegion region;
  bool decodable = true;
  if (setjmp(errors.jump)) {
    jpeg_destroy_decompress(&info);
    throw Error(name + ": cannot decode the JPEG (" + errors.message + ")");
  }
  jpeg_create_decompress(&info);
  jpeg_mem_src(&info, data, static_cast<unsigned long>(size));
  jpeg_read_header(&info, TRUE);
  if (info.jpeg_color_space == JCS_CMYK || info.jpeg_color_space == JCS_YCCK) {
    decodable = false;
  } else {
    info.scale_num = 1;
    info.scale_denom = static_cast<unsigned int>(denominator);
    info.out_color_space = channels == 1 ? JCS_GRAYSCALE : JCS_RGB;
    jpeg_start_decompress(&info);
    region.scaled_width = static_cast<int>(info.output_width);
    region.scaled_height = static_cast<int>(info.output_height);
    const int y0 = std::min(scaled_down(top, denominator), region.scaled_height - 1);
    const int y1 = std::max(y0 + 1, std::min(scaled_up(bottom, denominator), region.scaled_height));
    JDIMENSION x0 =
        static_cast<JDIMENSION>(std::min(scaled_down(left, denominator), region.scaled_width - 1));
    const int x1 = std::max(static_cast<int>(x0) + 1,
                            std::min(scaled_up(right, denominator), region.scaled_width));
    JDIMENSION width = static_cast<JDIMENSION>(x1) - x0;
    if (static_cast<int>(width) < region.scaled_width)
      jpeg_crop_scanline(&info, &x0, &width);  // widens to whole iMCU columns
    if (y0 > 0) jpeg_skip_scanlines(&info, static_cast<JDIMENSION>(y0));
    const int components = static_cast<int>(info.output_components);
    const size_t stride = static_cast<size_t>(info.output_width) * components;
    uint8_t* rows = region_rows(stride * static_cast<size_t>(y1 - y0));
    for (int y = y0; y < y1; ++y) {
      JSAMPROW row = rows + stride * static_cast<size_t>(y - y0);
      jpeg_read_scanlines(&info, &row, 1);
    }
    region.pixels = cv::Mat(y1 - y0, static_cast<int>(info.output_width),
                            components == 1 ? CV_8UC1 : CV_8UC3, rows, stride);
    region.x0 = static_cast<int>(x0);
    region.y0 = y0;
    jpeg_abort_decompress(&info);  // the rows below the region are never read
  }
  jpeg_destroy_decompress(&info);
  if (!decodable) return std::nullopt;
  return region;
}

size_t kept_region_bytes() {
  return region_buffer().capacity();
}

}  // namespace vit::io::detail
