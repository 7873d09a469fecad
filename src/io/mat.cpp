#include "mat.hpp"

#include <cstring>

#include <torch/torch.h>
#include <opencv2/imgproc.hpp>

#include "vit/error.hpp"

namespace vit::io::detail {

void check_image(const at::Tensor& image, const std::string& where) {
  if (!image.defined()) throw Error(where + ": image tensor is undefined");
  if (image.scalar_type() != torch::kUInt8 || image.dim() != 3 ||
      (image.size(0) != 1 && image.size(0) != 3) || image.size(1) <= 0 || image.size(2) <= 0) {
    throw Error(where + ": image is " + std::string(c10::toString(image.scalar_type())) + " " +
                c10::str(image.sizes()) + ", expected uint8 (C, H, W) with C = 1 or 3");
  }
}

cv::Mat to_mat(const at::Tensor& image, const std::string& where) {
  check_image(image, where);
  const int channels = static_cast<int>(image.size(0));
  const int height = static_cast<int>(image.size(1));
  const int width = static_cast<int>(image.size(2));
  at::Tensor hwc = image.to(torch::kCPU).permute({1, 2, 0}).contiguous();  // (H, W, C)
  cv::Mat mat(height, width, CV_8UC(channels));
  std::memcpy(mat.data, hwc.data_ptr<uint8_t>(), hwc.numel());
  return mat;
}

at::Tensor from_mat(const cv::Mat& mat) {
  cv::Mat continuous = mat.isContinuous() ? mat : mat.clone();
  const int64_t channels = continuous.channels();
  at::Tensor hwc = torch::empty({continuous.rows, continuous.cols, channels}, torch::kUInt8);
  std::memcpy(hwc.data_ptr<uint8_t>(), continuous.data, hwc.numel());
  return hwc.permute({2, 0, 1}).contiguous();  // (C, H, W)
}

namespace {

// Scales any depth to 8 bits: integers by their full range, floats as [0, 1].
cv::Mat to_depth8(const cv::Mat& mat) {
  if (mat.depth() == CV_8U) return mat;
  double scale = 255.0;  // CV_32F, CV_64F, CV_16F
  switch (mat.depth()) {
    case CV_16U:
      scale = 255.0 / 65535.0;
      break;
    case CV_8S:
      scale = 255.0 / 127.0;
      break;
    case CV_16S:
      scale = 255.0 / 32767.0;
      break;
    case CV_32S:
      scale = 255.0 / 2147483647.0;
      break;
    default:
      break;
  }
  cv::Mat out;
  mat.convertTo(out, CV_8U, scale);  // rounds, and saturates negatives to 0
  return out;
}

}  // namespace

cv::Mat to_uint8_channels(const cv::Mat& decoded, int channels) {
  cv::Mat mat = to_depth8(decoded);
  cv::Mat out;
  switch (mat.channels()) {
    case 1:
      if (channels == 1) return mat;
      cv::cvtColor(mat, out, cv::COLOR_GRAY2RGB);
      return out;
    case 2: {  // gray + alpha
      cv::extractChannel(mat, out, 0);
      return to_uint8_channels(out, channels);
    }
    case 3:
      cv::cvtColor(mat, out, channels == 1 ? cv::COLOR_BGR2GRAY : cv::COLOR_BGR2RGB);
      return out;
    case 4:
      cv::cvtColor(mat, out, channels == 1 ? cv::COLOR_BGRA2GRAY : cv::COLOR_BGRA2RGB);
      return out;
    default:
      throw Error("decoded image has " + std::to_string(mat.channels()) +
                  " channels, expected 1 to 4");
  }
}

}  // namespace vit::io::detail
