#pragma once
// What a JPEG's header says before any pixel is decoded: its size and EXIF
// orientation. The bytes are untrusted: a header that does not parse gives nullopt,
// never a read outside `data`.
#include <cstddef>
#include <cstdint>
#include <optional>

namespace vit::io {

struct JpegHeader {
  int64_t width = 0;  // as stored (the SOF segment)
  int64_t height = 0;
  int orientation = 1;  // EXIF tag 0x0112, 1..8 (1 when absent or out of range)
  // The DCT coefficients libjpeg holds for the whole image before it can give a row
  // (a progressive file, or a first scan without every component); else 0.
  int64_t coefficient_bytes = 0;

  // After the EXIF rotation that decoding applies.
  int64_t oriented_width() const { return orientation >= 5 ? height : width; }
  int64_t oriented_height() const { return orientation >= 5 ? width : height; }
};

// A baseline, extended or progressive JPEG's header, read to its first scan (SOS);
// nullopt unless a valid frame header (SOF) and a scan header come first.
std::optional<JpegHeader> read_jpeg_header(const uint8_t* data, size_t size);

}  // namespace vit::io
