// decode_mat refuses images whose header claims too much before any codec runs: a
// fuzzing finding was 231 bytes that made OpenCV allocate 2 GB. Every read of a
// header is bounds-checked.
#include "image_size.hpp"

#include <cctype>
#include <cstdlib>
#include <cstring>

#include "header_bytes.hpp"
#include "vit/error.hpp"
#include "vit/io/jpeg_header.hpp"

namespace vit::io::detail {
namespace {

std::optional<ImageSize> sized(std::optional<uint32_t> width, std::optional<uint32_t> height) {
  if (!width || !height) return std::nullopt;
  return ImageSize{*width, *height};
}

// PNG: the IHDR chunk comes first, at byte 8: width and height, big-endian.
std::optional<ImageSize> png_size(const HeaderBytes& b) {
  if (!b.matches(12, "IHDR", 4)) return std::nullopt;
  return sized(b.uint(16, 4, true), b.uint(20, 4, true));
}

// BMP: the DIB header at byte 14 starts with its own length; the 12-byte
// OS/2 core header holds 16-bit sides, the others signed 32-bit ones (a
// negative height stores the rows top-down).
std::optional<ImageSize> bmp_size(const HeaderBytes& b) {
  const auto header = b.uint(14, 4, false);
  if (!header) return std::nullopt;
  if (*header == 12) return sized(b.uint(18, 2, false), b.uint(20, 2, false));
  const auto width = b.uint(18, 4, false), height = b.uint(22, 4, false);
  if (!width || !height) return std::nullopt;
  const auto magnitude = [](uint32_t v) {
    return static_cast<uint32_t>(std::llabs(static_cast<int64_t>(static_cast<int32_t>(v))));
  };
  return ImageSize{magnitude(*width), magnitude(*height)};
}

// WebP: the first chunk after "RIFF" size "WEBP" is the lossy bitstream
// (VP8: 14-bit sides after its frame tag and start code), the lossless one
// (VP8L: 14-bit sides minus one, packed after its signature byte) or the
// extended header (VP8X: 24-bit canvas sides minus one).
std::optional<ImageSize> webp_size(const HeaderBytes& b) {
  if (b.matches(12, "VP8 ", 4)) {
    const auto width = b.uint(26, 2, false), height = b.uint(28, 2, false);
    if (!width || !height) return std::nullopt;
    return ImageSize{*width & 0x3fff, *height & 0x3fff};
  }
  if (b.matches(12, "VP8L", 4)) {
    const auto bits = b.uint(21, 4, false);
    if (!bits) return std::nullopt;
    return ImageSize{(*bits & 0x3fff) + 1, (*bits >> 14 & 0x3fff) + 1};
  }
  if (b.matches(12, "VP8X", 4)) {
    const auto width = b.uint(24, 3, false), height = b.uint(27, 3, false);
    if (!width || !height) return std::nullopt;
    return ImageSize{int64_t{*width} + 1, int64_t{*height} + 1};
  }
  return std::nullopt;
}

// TIFF: the first image file directory's ImageWidth (256) and ImageLength
// (257) entries, each a SHORT or a LONG held in the entry itself.
std::optional<ImageSize> tiff_size(const HeaderBytes& b) {
  const bool big = b.matches(0, "MM", 2);
  const auto read = [&](size_t at, size_t count) { return b.uint(at, count, big); };
  const auto directory = read(4, 4);
  if (!directory) return std::nullopt;
  const auto entries = read(*directory, 2);
  if (!entries) return std::nullopt;
  std::optional<uint32_t> width, height;
  for (uint32_t i = 0; i < *entries; ++i) {
    const size_t entry = size_t{*directory} + 2 + 12 * size_t{i};
    const auto tag = read(entry, 2), type = read(entry + 2, 2);
    if (!tag || !type) return std::nullopt;
    if (*tag != 256 && *tag != 257) continue;
    std::optional<uint32_t> value;
    if (*type == 3) value = read(entry + 8, 2);  // SHORT
    if (*type == 4) value = read(entry + 8, 4);  // LONG
    (*tag == 256 ? width : height) = value;
  }
  return sized(width, height);
}

// PNM: "P1".."P6", then the width and the height in ASCII decimal, each
// after white space and any number of "#" comments running to the line's end.
std::optional<ImageSize> pnm_size(const HeaderBytes& b) {
  size_t at = 2;
  const auto number = [&]() -> std::optional<uint32_t> {
    while (true) {
      const auto c = b.u8(at);
      if (!c) return std::nullopt;
      if (*c == '#') {
        while (b.u8(at) && *b.u8(at) != '\n' && *b.u8(at) != '\r')
          ++at;
      } else if (std::isspace(*c)) {
        ++at;
      } else {
        break;
      }
    }
    uint64_t value = 0;
    size_t digits = 0;
    for (auto c = b.u8(at); c && std::isdigit(*c); c = b.u8(++at), ++digits) {
      value = value * 10 + (*c - '0');
      if (value > UINT32_MAX) return std::nullopt;
    }
    const auto after = b.u8(at);  // a number ends at white space, never at the data's end
    if (digits == 0 || !after || !(std::isspace(*after) || *after == '#')) return std::nullopt;
    return static_cast<uint32_t>(value);
  };
  const auto width = number();
  const auto height = number();
  return sized(width, height);
}

}  // namespace

std::optional<ImageSize> read_image_size(const uint8_t* data, size_t size) {
  const HeaderBytes b(data, size);
  if (b.matches(0, "\xff\xd8\xff", 3)) {
    const auto jpeg = read_jpeg_header(data, size);
    if (!jpeg) return std::nullopt;
    return claimed_size(*jpeg);
  }
  if (b.matches(0, "\x89PNG\r\n\x1a\n", 8)) return png_size(b);
  if (b.matches(0, "BM", 2)) return bmp_size(b);
  if (b.matches(0, "RIFF", 4) && b.matches(8, "WEBP", 4)) return webp_size(b);
  if (b.matches(0, "II*\0", 4)) return tiff_size(b);
  if (b.matches(0, "MM\0*", 4)) return tiff_size(b);
  const auto kind = b.u8(1);
  if (b.matches(0, "P", 1) && kind && *kind >= '1' && *kind <= '6') return pnm_size(b);
  return std::nullopt;
}

ImageSize claimed_size(const JpegHeader& jpeg) {
  return {jpeg.width, jpeg.height, jpeg.coefficient_bytes};
}

void hold_to_caps(const ImageSize& claimed, const std::string& name) {
  const std::string sides = std::to_string(claimed.width) + "x" + std::to_string(claimed.height);
  // Divided, not multiplied: a side may claim up to 2^32, and the product overflow int64.
  if (claimed.width > 0 && claimed.height > kMaxDecodedPixels / claimed.width)
    throw Error(name + ": a " + sides + " image, expected at most " +
                std::to_string(kMaxDecodedPixels) + " pixels");
  if (claimed.decoder_bytes > kMaxDecoderBytes)
    throw Error(name + ": a " + sides + " progressive (or multi-scan) JPEG needs " +
                std::to_string(claimed.decoder_bytes >> 20) + " MB to decode, expected at most " +
                std::to_string(kMaxDecoderBytes >> 20) + " MB");
}

ImageSize checked_image_size(const uint8_t* data, size_t size, const std::string& name) {
  const auto claimed = read_image_size(data, size);
  if (!claimed)
    throw Error(name +
                ": cannot decode the image (its header holds no size: damaged or cut short)");
  hold_to_caps(*claimed, name);
  return *claimed;
}

}  // namespace vit::io::detail
