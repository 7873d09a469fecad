#pragma once
// Images in and out of the library: uint8 (C, H, W) with C = 1 (gray) or 3 (RGB);
// batches (B, C, H, W). Nothing here touches global state, so the decode and resize
// functions may be called from many threads at once.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

namespace vit::io {

// Reads an image of any size, channel count and depth (8/16-bit, float in [0, 1])
// into uint8 (channels, side, side): 1 gives luma (0.299 R + 0.587 G + 0.114 B), 3
// gives RGB with gray replicated; alpha is dropped. Stretched to side x side; side =
// 0 keeps the file's size. Throws vit::Error naming a missing or undecodable file.
at::Tensor read_image(const std::filesystem::path& path, int64_t channels, int64_t side);

// A file's bytes. Throws vit::Error naming a missing, unreadable or folder path.
std::vector<uint8_t> read_file_bytes(const std::filesystem::path& path);

// The same from encoded bytes in memory; `name` only labels error messages.
at::Tensor decode_image(const uint8_t* data, size_t size, int64_t channels, int64_t side,
                        const std::string& name);
at::Tensor decode_image(const std::vector<uint8_t>& bytes, int64_t channels, int64_t side,
                        const std::string& name);

// (C, H, W) -> (C, side, side); the input itself when it already has that size.
// Shrinking averages pixel areas (INTER_AREA); enlarging is bilinear.
at::Tensor resize_image(const at::Tensor& image, int64_t side);

// resize_image over a batch (B, C, H, W), in parallel.
at::Tensor resize_batch(const at::Tensor& images, int64_t side);

// Writes a PNG, creating missing parent folders, and returns its bytes. Throws
// vit::Error naming the path when any step fails.
std::vector<uint8_t> write_png(const std::filesystem::path& path, const at::Tensor& image);

std::vector<uint8_t> encode_png(const at::Tensor& image);

// Float [0, 1] -> uint8 by round(x * 255) after clamping; any shape.
at::Tensor to_uint8(const at::Tensor& image);

// x * std + mean per channel, clamped to [0, 1], for float (C, H, W) or (B, C, H, W);
// mean and std have C entries (or one for every channel).
at::Tensor unnormalize(const at::Tensor& image, const std::vector<double>& mean,
                       const std::vector<double>& std);

}  // namespace vit::io
