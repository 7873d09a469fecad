#pragma once
// Decoding an encoded image straight to a model's input, for the streamed
// pipeline (data/stream_loader): a box of the image, resized, then a window
// of that. The data layer plans it (data/image_transform: torchvision's
// RandomResizedCrop, or timm's resize-and-centre-crop); this decodes it.
//
// A JPEG whose header gives its size is decoded at a reduced scale through
// libjpeg's DCT scaling (OpenCV's IMREAD_REDUCED_*): the smallest of 1/8,
// 1/4 and 1/2 that keeps the box at least as large as what it is resized to,
// so the resize still only shrinks. That skips most of the decoding of a
// photograph much larger than the model's input. Other formats are decoded
// whole. Thread-safe, like io/image_io.
// Key: C channels, H x W the image after its EXIF orientation.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

#include <ATen/core/Tensor.h>

namespace vit::io {

struct CropResizePlan {
  // The box taken from the image, in its pixels (after EXIF orientation).
  int64_t top = 0, left = 0, height = 0, width = 0;
  // The size the box is resized to: shrinking averages pixel areas
  // (INTER_AREA, which antialiases), enlarging interpolates bilinearly.
  int64_t out_height = 0, out_width = 0;
  // The window of the resized box that is returned; 0 x 0 = all of it.
  int64_t crop_top = 0, crop_left = 0, crop_height = 0, crop_width = 0;
};

// The plan for an image of H x W; called once per image, after its size is
// known (from the header, or from the decoded pixels).
using PlanForSize = std::function<CropResizePlan(int64_t height, int64_t width)>;

// uint8 (C, crop_height, crop_width), C = 1 (luma) or 3 (RGB), a view of
// channels-last memory (not contiguous: .contiguous() for a plain one). Gray
// from a JPEG is the file's own luma (libjpeg's Y channel), within a level or
// two of 0.299 R + 0.587 G + 0.114 B of its colour decode. Throws
// vit::Error naming `name` for bytes that do not decode, and for a plan
// whose box or window lies outside the image or the resized box.
at::Tensor decode_planned(const uint8_t* data, size_t size, int64_t channels,
                          const PlanForSize& plan, const std::string& name);

// The DCT scale denominator (1, 2, 4 or 8) decode_planned uses for a box of
// box_height x box_width resized to out_height x out_width.
int dct_scale_for(int64_t box_height, int64_t box_width, int64_t out_height, int64_t out_width);

// The bytes the calling thread keeps between decodes (a JPEG region's rows):
// at most 16 MiB after a decode that needed no more, however large an image
// came before it.
size_t kept_decode_bytes();

}  // namespace vit::io
