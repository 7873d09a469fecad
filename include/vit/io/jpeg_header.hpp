#pragma once
// What a JPEG's header says before any pixel is decoded: its size and its
// EXIF orientation. The streamed pipeline needs the size first to choose a
// crop, and with it a DCT scale (data/stream_loader, io/planned_decode).
// The bytes are untrusted: every offset is checked, and a header that does
// not parse gives nullopt, never a read outside `data`.
#include <cstddef>
#include <cstdint>
#include <optional>

namespace vit::io {

struct JpegHeader {
  int64_t width = 0;  // as stored (the SOF segment)
  int64_t height = 0;
  int orientation = 1;  // EXIF tag 0x0112, 1..8 (1 when absent or out of range)
  // The bytes of DCT coefficients libjpeg holds for the whole image before
  // it can give a row: for a progressive file, or one whose first scan
  // holds fewer than all its components; 0 for the others, which decode
  // row by row.
  int64_t coefficient_bytes = 0;

  // The size after the EXIF rotation that decoding applies (orientations
  // 5 to 8 turn the image a quarter, swapping width and height).
  int64_t oriented_width() const { return orientation >= 5 ? height : width; }
  int64_t oriented_height() const { return orientation >= 5 ? width : height; }
};

// The header of a baseline, extended or progressive JPEG, read to its first
// scan (SOS); nullopt when `data` is not a JPEG or its markers end, or run
// past the buffer, before a frame header (SOF) with a non-zero size and
// valid sampling factors, then a scan header.
std::optional<JpegHeader> read_jpeg_header(const uint8_t* data, size_t size);

}  // namespace vit::io
