#pragma once
// Private to src/io: the size an encoded image claims in its header, read before any
// decoder sees the bytes, since OpenCV's codecs allocate the whole claimed image
// before they find that the data runs out.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "vit/io/jpeg_header.hpp"

namespace vit::io::detail {

// The most pixels an image may claim: 16384 x 16384.
constexpr int64_t kMaxDecodedPixels = int64_t{1} << 28;

// The most memory a decoder may hold besides the pixels: libjpeg's
// whole-image coefficients of a progressive JPEG, 6 bytes a pixel in 4:4:4.
constexpr int64_t kMaxDecoderBytes = int64_t{1} << 30;

struct ImageSize {
  int64_t width = 0;
  int64_t height = 0;
  int64_t decoder_bytes = 0;  // held by the decoder besides the pixels, where known
};

// From a JPEG, PNG, BMP, WebP, TIFF or PNM header; nullopt for other bytes and for a
// header that is cut short or damaged.
std::optional<ImageSize> read_image_size(const uint8_t* data, size_t size);
// What a JPEG's header (read already) claims.
ImageSize claimed_size(const JpegHeader& jpeg);

// Throws vit::Error naming `name` when `claimed` is over kMaxDecodedPixels,
// or would make the decoder hold over kMaxDecoderBytes.
void hold_to_caps(const ImageSize& claimed, const std::string& name);
// read_image_size, then hold_to_caps; a header without a size is an error too.
ImageSize checked_image_size(const uint8_t* data, size_t size, const std::string& name);

}  // namespace vit::io::detail
