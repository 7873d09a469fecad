// The streamed pipeline needs a JPEG's size before decoding, to choose a crop and
// with it a DCT scale (data/stream_loader, io/planned_decode). Every offset is
// checked; a frame header needs a non-zero size and valid sampling factors.
#include "vit/io/jpeg_header.hpp"

#include <algorithm>
#include <utility>
#include <vector>

#include "header_bytes.hpp"

namespace vit::io {
namespace {

using detail::HeaderBytes;

constexpr uint8_t kMarker = 0xff;
constexpr uint8_t kStartOfImage = 0xd8;
constexpr uint8_t kStartOfScan = 0xda;
constexpr uint8_t kApp1 = 0xe1;
constexpr uint16_t kOrientationTag = 0x0112;
constexpr uint16_t kShortType = 3;

// Start-of-frame markers hold the image's size: every SOFn but DHT (c4),
// JPG (c8) and DAC (cc), which share their range.
bool is_frame_header(uint8_t marker) {
  return marker >= 0xc0 && marker <= 0xcf && marker != 0xc4 && marker != 0xc8 && marker != 0xcc;
}

// Progressive frames: SOF2, SOF6, SOF10 and SOF14.
bool is_progressive(uint8_t marker) {
  return marker == 0xc2 || marker == 0xc6 || marker == 0xca || marker == 0xce;
}

// The whole-image coefficient arrays libjpeg allocates (jdcoefct.c): per
// component, its 8x8 blocks across and down, each rounded up to a multiple
// of its sampling factor, 64 coefficients of 2 bytes a block. nullopt for
// sampling factors outside 1..4, which libjpeg refuses.
std::optional<int64_t> whole_image_coefficients(const HeaderBytes& frame, int64_t height,
                                                int64_t width) {
  const auto count = frame.u8(5);
  if (!count || *count == 0) return std::nullopt;
  std::vector<std::pair<int, int>> factors;  // (across, down) per component
  for (int i = 0; i < *count; ++i) {
    const auto byte = frame.u8(7 + 3 * size_t(i));
    if (!byte) return std::nullopt;
    const int h = *byte >> 4, v = *byte & 15;
    if (h < 1 || h > 4 || v < 1 || v > 4) return std::nullopt;
    factors.emplace_back(h, v);
  }
  int h_max = 1, v_max = 1;
  for (const auto& [h, v] : factors) {
    h_max = std::max(h_max, h);
    v_max = std::max(v_max, v);
  }
  const auto up = [](int64_t a, int64_t b) { return (a + b - 1) / b; };
  int64_t bytes = 0;
  for (const auto& [h, v] : factors) {
    const int64_t across = up(up(width * h, h_max), 8), down = up(up(height * v, v_max), 8);
    bytes += up(across, h) * h * up(down, v) * v * 64 * 2;
  }
  return bytes;
}

// Markers that stand alone, without a length: TEM, RSTn, SOI, EOI.
bool has_no_length(uint8_t marker) {
  return marker == 0x01 || (marker >= 0xd0 && marker <= 0xd9);
}

// The orientation in an APP1 segment's body "Exif\0\0" + TIFF; 1 if absent.
int exif_orientation(const HeaderBytes& app1) {
  if (!app1.starts_with("Exif\0\0", 6)) return 1;
  const HeaderBytes tiff = app1.from(6, app1.size());
  bool big_endian;
  if (tiff.starts_with("MM", 2)) {
    big_endian = true;
  } else if (tiff.starts_with("II", 2)) {
    big_endian = false;
  } else {
    return 1;
  }
  const auto magic = tiff.u16(2, big_endian);
  const auto ifd = tiff.u32(4, big_endian);
  if (!magic || *magic != 42 || !ifd) return 1;
  const auto entries = tiff.u16(*ifd, big_endian);
  if (!entries) return 1;
  for (uint32_t i = 0; i < *entries; ++i) {
    const size_t entry = size_t(*ifd) + 2 + 12 * size_t(i);
    const auto tag = tiff.u16(entry, big_endian);
    if (!tag) return 1;
    if (*tag != kOrientationTag) continue;
    const auto type = tiff.u16(entry + 2, big_endian);
    const auto value = tiff.u16(entry + 8, big_endian);
    if (!type || *type != kShortType || !value || *value < 1 || *value > 8) return 1;
    return *value;
  }
  return 1;
}

}  // namespace

std::optional<JpegHeader> read_jpeg_header(const uint8_t* data, size_t size) {
  const HeaderBytes bytes(data, size);
  if (bytes.u8(0) != kMarker || bytes.u8(1) != kStartOfImage) return std::nullopt;
  JpegHeader header;
  std::optional<int64_t> frame_coefficients;  // set by the frame header
  bool progressive = false;
  int components = 0;
  size_t at = 2;
  while (true) {
    // A marker is 0xff, then any number of 0xff fill bytes, then its code.
    // Bytes before it, and 0xff 0x00 pairs, are skipped as libjpeg skips
    // them (with a warning): the header must be the one the decoder reads.
    while (bytes.u8(at) && bytes.u8(at) != kMarker)
      ++at;
    while (bytes.u8(at) == kMarker)
      ++at;
    const auto marker = bytes.u8(at);
    if (!marker) return std::nullopt;
    ++at;
    if (*marker == 0) continue;
    if (has_no_length(*marker)) continue;
    const auto length = bytes.u16(at);  // counts its own two bytes
    if (!length || *length < 2) return std::nullopt;
    const HeaderBytes body = bytes.from(at + 2, *length - 2u);
    if (*marker == kApp1 && header.orientation == 1) header.orientation = exif_orientation(body);
    if (is_frame_header(*marker) && !frame_coefficients) {  // EXIF (APP1) comes before it
      const auto height = body.u16(1), width = body.u16(3);
      if (!height || !width || *height == 0 || *width == 0) return std::nullopt;
      header.height = *height;
      header.width = *width;
      frame_coefficients = whole_image_coefficients(body, header.height, header.width);
      if (!frame_coefficients) return std::nullopt;
      progressive = is_progressive(*marker);
      components = *body.u8(5);
    }
    if (*marker == kStartOfScan) {
      const auto in_scan = body.u8(0);
      if (!frame_coefficients || !in_scan) return std::nullopt;  // pixels before any frame
      const bool whole_image = progressive || *in_scan < components;
      header.coefficient_bytes = whole_image ? *frame_coefficients : 0;
      return header;
    }
    at += *length;
  }
}

}  // namespace vit::io
