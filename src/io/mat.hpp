#pragma once
// Private to src/io: the bridge between uint8 tensors and cv::Mat. Mats made
// here keep the tensor's channel order (RGB); only the codecs swap to BGR.
#include <cstddef>
#include <cstdint>
#include <string>

#include <ATen/core/Tensor.h>
#include <opencv2/core.hpp>

namespace vit::io::detail {

// Throws vit::Error unless `image` is uint8 (C, H, W) with C = 1 or 3 and H, W > 0.
void check_image(const at::Tensor& image, const std::string& where);

// uint8 (C, H, W) -> an owned CV_8UC1 or CV_8UC3 Mat (RGB order), on the CPU.
cv::Mat to_mat(const at::Tensor& image, const std::string& where);

// CV_8UC1 / CV_8UC3 -> uint8 (C, H, W), channel order unchanged, owning its memory.
at::Tensor from_mat(const cv::Mat& mat);
// The same as a (C, H, W) view of (H, W, C) memory: one copy, no transpose.
// Not contiguous; for callers that read it once, pixel by pixel.
at::Tensor from_mat_channels_last(const cv::Mat& mat);

// Decodes an encoded image held in memory with cv::imdecode's `flags`, after
// checking that it starts as a format we accept (PNG, JPEG, BMP, WebP, TIFF,
// PNM). Throws vit::Error naming `name` when it is empty, over 2 GiB, of
// another format, or does not decode. Thread-safe.
cv::Mat decode_mat(const uint8_t* data, size_t size, int flags, const std::string& name);

// The channel-count conversion every reader needs: any Mat a codec returns
// (1-4 channels, any depth) -> CV_8UC1 luma or CV_8UC3 RGB.
cv::Mat to_uint8_channels(const cv::Mat& decoded, int channels);

}  // namespace vit::io::detail
