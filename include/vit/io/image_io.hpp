#pragma once
// Images in and out of the library. Every image here is a uint8 tensor (C, H, W)
// with C = 1 (gray) or 3 (RGB, in that order); batches are (B, C, H, W). OpenCV
// stays inside src/io, so callers never see cv::Mat.
//
// Nothing here touches global state (no cv::setNumThreads, no caches), so the
// decode and resize functions may be called from many threads at once.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

namespace vit::io {

// Reads an image file of any size, channel count (gray, gray+alpha, RGB, RGBA)
// and depth (8/16-bit, float) into uint8 (channels, side, side): channels = 1
// gives luma (0.299 R + 0.587 G + 0.114 B), channels = 3 gives RGB with gray
// replicated. Alpha is dropped. 16-bit values are scaled by 255/65535 and float
// values are taken as [0, 1]. Non-square images are stretched to side x side.
// side = 0 keeps the file's size. Throws vit::Error naming the file when it is
// missing or cannot be decoded.
at::Tensor read_image(const std::filesystem::path& path, int64_t channels, int64_t side);

// The same from an encoded file held in memory (PNG, JPEG, BMP, ...). `name`
// only labels error messages. Thread-safe.
at::Tensor decode_image(const uint8_t* data, size_t size, int64_t channels, int64_t side,
                        const std::string& name);
at::Tensor decode_image(const std::vector<uint8_t>& bytes, int64_t channels, int64_t side,
                        const std::string& name);

// Resizes uint8 (C, H, W) to (C, side, side). Returns the input itself when it
// already has that size. Shrinking averages pixel areas (INTER_AREA); enlarging
// interpolates bilinearly (INTER_LINEAR).
at::Tensor resize_image(const at::Tensor& image, int64_t side);

// Resizes every image of a uint8 batch (B, C, H, W) to (B, C, side, side), in
// parallel over the batch; the same filters as resize_image. Returns the input
// itself when it already has that size.
at::Tensor resize_batch(const at::Tensor& images, int64_t side);

// Writes uint8 (C, H, W), C = 1 or 3 (RGB), as a PNG, creating missing parent
// folders, and returns the bytes written (for a caller that also embeds
// them). Throws vit::Error naming the path when any step fails.
std::vector<uint8_t> write_png(const std::filesystem::path& path, const at::Tensor& image);

// Encodes uint8 (C, H, W) as PNG bytes.
std::vector<uint8_t> encode_png(const at::Tensor& image);

// Float [0, 1] -> uint8 by round(x * 255) after clamping; works on any shape.
at::Tensor to_uint8(const at::Tensor& image);

// Undoes the trainer's normalisation: x * std + mean per channel, clamped to
// [0, 1]. `image` is float (C, H, W) or (B, C, H, W); mean and std have C
// entries (or one, used for every channel).
at::Tensor unnormalize(const at::Tensor& image, const std::vector<double>& mean,
                       const std::vector<double>& std);

}  // namespace vit::io
