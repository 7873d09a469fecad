#pragma once
// Private to src/io: the bridge between uint8 tensors and cv::Mat. Mats made
// here keep the tensor's channel order (RGB); only the codecs swap to BGR.
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

// The channel-count conversion every reader needs: any Mat a codec returns
// (1-4 channels, any depth) -> CV_8UC1 luma or CV_8UC3 RGB.
cv::Mat to_uint8_channels(const cv::Mat& decoded, int channels);

}  // namespace vit::io::detail
