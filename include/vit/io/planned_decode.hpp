#pragma once
// Decoding an encoded image straight to a model's input, for data/stream_loader: a
// box of the image, resized, then a window of that, as data/image_transform plans it.
// A JPEG is decoded at the smallest DCT scale (1/8, 1/4, 1/2) that keeps the box at
// least as large as its resized size; other formats whole. Thread-safe.
// Key: C channels, H x W the image after its EXIF orientation.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

#include <ATen/core/Tensor.h>

#include "vit/config.hpp"

namespace vit::io {

struct CropResizePlan {
  // The box taken from the image, in its pixels (after EXIF orientation).
  int64_t top = 0, left = 0, height = 0, width = 0;
  // The box's resized size, and how: kArea averages pixel areas when shrinking and
  // is bilinear when enlarging; kBilinear and kBicubic are Pillow's filters.
  int64_t out_height = 0, out_width = 0;
  Interpolation interpolation = Interpolation::kArea;
  // The window of the resized box that is returned; 0 x 0 = all of it.
  int64_t crop_top = 0, crop_left = 0, crop_height = 0, crop_width = 0;
};

// The plan for an H x W image; called once, when its size is known.
using PlanForSize = std::function<CropResizePlan(int64_t height, int64_t width)>;

// uint8 (C, crop_height, crop_width), C = 1 (luma) or 3 (RGB), a non-contiguous view
// of channels-last memory. A JPEG's gray is its own Y channel, within a level or two
// of 0.299 R + 0.587 G + 0.114 B. Throws vit::Error naming `name` for bytes that do
// not decode, or a box or window outside the image or the resized box.
at::Tensor decode_planned(const uint8_t* data, size_t size, int64_t channels,
                          const PlanForSize& plan, const std::string& name);

// The DCT scale denominator (1, 2, 4 or 8) decode_planned uses for a box of
// box_height x box_width resized to out_height x out_width by area averaging.
int dct_scale_for(int64_t box_height, int64_t box_width, int64_t out_height, int64_t out_width);

// The bytes the calling thread keeps between decodes: at most 16 MiB after a decode
// that needed no more, however large an image came before it.
size_t kept_decode_bytes();

}  // namespace vit::io
