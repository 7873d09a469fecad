#include "image_size.hpp"

#include <cctype>
#include <cstdlib>
#include <cstring>

#include "vit/error.hpp"
#include "vit/io/jpeg_header.hpp"

namespace vit::io::detail {
namespace {

// Bounds-checked little- and big-endian reads; nullopt past the end.
class Bytes {
 public:
  Bytes(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  bool has(size_t at, size_t count) const { return at <= size_ && size_ - at >= count; }
  bool matches(size_t at, const char* text) const {
    const size_t n = std::strlen(text);
    return has(at, n) && std::memcmp(data_ + at, text, n) == 0;
  }
  std::optional<uint32_t> le(size_t at, size_t count) const {
    if (!has(at, count)) return std::nullopt;
    uint32_t value = 0;
    for (size_t i = count; i-- > 0;)
      value = value << 8 | data_[at + i];
    return value;
  }
  std::optional<uint32_t> be(size_t at, size_t count) const {
    if (!has(at, count)) return std::nullopt;
    uint32_t value = 0;
    for (size_t i = 0; i < count; ++i)
      value = value << 8 | data_[at + i];
    return value;
  }
  std::optional<uint8_t> at(size_t i) const {
    if (i >= size_) return std::nullopt;
    return data_[i];
  }

 private:
  const uint8_t* data_;
  size_t size_;
};

std::optional<ImageSize> sized(std::optional<uint32_t> width, std::optional<uint32_t> height) {
  if (!width || !height) return std::nullopt;
  return ImageSize{*width, *height};
}

// PNG: the IHDR chunk comes first, at byte 8: width and height, big-endian.
std::optional<ImageSize> png_size(const Bytes& b) {
  if (!b.matches(12, "IHDR")) return std::nullopt;
  return sized(b.be(16, 4), b.be(20, 4));
}

// BMP: the DIB header at byte 14 starts with its own length; the 12-byte
// OS/2 core header holds 16-bit sides, the others signed 32-bit ones (a
// negative height stores the rows top-down).
std::optional<ImageSize> bmp_size(const Bytes& b) {
  const auto header = b.le(14, 4);
  if (!header) return std::nullopt;
  if (*header == 12) return sized(b.le(18, 2), b.le(20, 2));
  const auto width = b.le(18, 4), height = b.le(22, 4);
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
std::optional<ImageSize> webp_size(const Bytes& b) {
  if (b.matches(12, "VP8 ")) {
    const auto width = b.le(26, 2), height = b.le(28, 2);
    if (!width || !height) return std::nullopt;
    return ImageSize{*width & 0x3fff, *height & 0x3fff};
  }
  if (b.matches(12, "VP8L")) {
    const auto bits = b.le(21, 4);
    if (!bits) return std::nullopt;
    return ImageSize{(*bits & 0x3fff) + 1, (*bits >> 14 & 0x3fff) + 1};
  }
  if (b.matches(12, "VP8X")) {
    const auto width = b.le(24, 3), height = b.le(27, 3);
    if (!width || !height) return std::nullopt;
    return ImageSize{int64_t{*width} + 1, int64_t{*height} + 1};
  }
  return std::nullopt;
}

// TIFF: the first image file directory's ImageWidth (256) and ImageLength
// (257) entries, each a SHORT or a LONG held in the entry itself.
std::optional<ImageSize> tiff_size(const Bytes& b) {
  const bool big = b.matches(0, "MM");
  const auto read = [&](size_t at, size_t count) {
    return big ? b.be(at, count) : b.le(at, count);
  };
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
std::optional<ImageSize> pnm_size(const Bytes& b) {
  size_t at = 2;
  const auto number = [&]() -> std::optional<uint32_t> {
    while (true) {
      const auto c = b.at(at);
      if (!c) return std::nullopt;
      if (*c == '#') {
        while (b.at(at) && *b.at(at) != '\n' && *b.at(at) != '\r')
          ++at;
      } else if (std::isspace(*c)) {
        ++at;
      } else {
        break;
      }
    }
    uint64_t value = 0;
    size_t digits = 0;
    for (auto c = b.at(at); c && std::isdigit(*c); c = b.at(++at), ++digits) {
      value = value * 10 + (*c - '0');
      if (value > UINT32_MAX) return std::nullopt;
    }
    const auto after = b.at(at);  // a number ends at white space, never at the data's end
    if (digits == 0 || !after || !(std::isspace(*after) || *after == '#')) return std::nullopt;
    return static_cast<uint32_t>(value);
  };
  const auto width = number();
  const auto height = number();
  return sized(width, height);
}

}  // namespace

std::optional<ImageSize> read_image_size(const uint8_t* data, size_t size) {
  const Bytes b(data, size);
  if (b.matches(0, "\xff\xd8\xff")) {
    const auto jpeg = read_jpeg_header(data, size);
    if (!jpeg) return std::nullopt;
    return ImageSize{jpeg->width, jpeg->height, jpeg->coefficient_bytes};
  }
  if (b.matches(0, "\x89PNG\r\n\x1a\n")) return png_size(b);
  if (b.matches(0, "BM")) return bmp_size(b);
  if (b.matches(0, "RIFF") && b.matches(8, "WEBP")) return webp_size(b);
  if (b.matches(0, "II*") && b.at(3) == 0) return tiff_size(b);
  if (b.matches(0, "MM") && b.at(2) == 0 && b.at(3) == '*') return tiff_size(b);
  const auto kind = b.at(1);
  if (b.matches(0, "P") && kind && *kind >= '1' && *kind <= '6') return pnm_size(b);
  return std::nullopt;
}

ImageSize checked_image_size(const uint8_t* data, size_t size, const std::string& name) {
  const auto claimed = read_image_size(data, size);
  if (!claimed)
    throw Error(name +
                ": cannot decode the image (its header holds no size: damaged or cut short)");
  const std::string sides = std::to_string(claimed->width) + "x" + std::to_string(claimed->height);
  if (over_pixel_cap(claimed->width, claimed->height))
    throw Error(name + ": a " + sides + " image, expected at most " +
                std::to_string(kMaxDecodedPixels) + " pixels");
  if (claimed->decoder_bytes > kMaxDecoderBytes)
    throw Error(name + ": a " + sides + " progressive (or multi-scan) JPEG needs " +
                std::to_string(claimed->decoder_bytes >> 20) + " MB to decode, expected at most " +
                std::to_string(kMaxDecoderBytes >> 20) + " MB");
  return *claimed;
}

}  // namespace vit::io::detail
