#include "mat.hpp"

#include <cstring>
#include <initializer_list>
#include <limits>

#include <torch/torch.h>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include "image_size.hpp"
#include "vit/error.hpp"

namespace vit::io::detail {
namespace {

// Whether `data` starts as a PNG, JPEG, BMP, WebP, TIFF or PNM (PBM, PGM,
// PPM) file does. Only these reach OpenCV, which picks the first decoder whose
// signature check accepts the bytes. Its DICOM reader (GDCM) accepts any file
// with "DICM" at offset 128 (the DICOM preamble) and aborts the process on
// some damaged ones instead of failing: a fuzzing finding, a WebP header too
// damaged for OpenCV's WebP check, which then fell through to GDCM. So a file
// with that marker is refused too. The other readers OpenCV tries later
// (JPEG 2000, OpenEXR, Sun raster, HDR, PFM) match magic numbers at the start
// of the file that none of the accepted formats begins with. Fewer parsers
// also mean less to trust in files from elsewhere.
bool has_supported_signature(const uint8_t* data, size_t size) {
  const auto has = [&](std::initializer_list<uint8_t> magic, size_t at = 0) {
    if (size < at + magic.size()) return false;
    size_t i = at;
    for (const uint8_t byte : magic)
      if (data[i++] != byte) return false;
    return true;
  };
  if (has({'D', 'I', 'C', 'M'}, 128)) return false;                          // DICOM: for GDCM only
  return has({0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'}) ||               // PNG
         has({0xff, 0xd8, 0xff}) ||                                          // JPEG
         has({'B', 'M'}) ||                                                  // BMP
         (has({'R', 'I', 'F', 'F'}) && has({'W', 'E', 'B', 'P'}, 8)) ||      // WebP
         has({'I', 'I', '*', 0}) || has({'M', 'M', 0, '*'}) ||               // TIFF
         (size >= 2 && data[0] == 'P' && data[1] >= '1' && data[1] <= '6');  // PNM
}

}  // namespace

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

at::Tensor from_mat_channels_last(const cv::Mat& mat) {
  cv::Mat continuous = mat.isContinuous() ? mat : mat.clone();
  at::Tensor hwc =
      torch::empty({continuous.rows, continuous.cols, continuous.channels()}, torch::kUInt8);
  std::memcpy(hwc.data_ptr<uint8_t>(), continuous.data, hwc.numel());
  return hwc.permute({2, 0, 1});  // (C, H, W) strides (1, W*C, C)
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

cv::Mat decode_mat(const uint8_t* data, size_t size, int flags, const std::string& name) {
  if (data == nullptr || size == 0) throw Error(name + ": empty file, expected an image");
  if (size > static_cast<size_t>(std::numeric_limits<int>::max())) {
    throw Error(name + ": " + std::to_string(size) + " bytes, expected an image file under 2 GiB");
  }
  if (!has_supported_signature(data, size)) {
    throw Error(name +
                ": not a PNG, JPEG, BMP, WebP, TIFF or PNM (PBM/PGM/PPM) image (unsupported "
                "format or a damaged header)");
  }
  // OpenCV allocates the size a header claims before it reads a pixel (up
  // to 2^30 pixels of up to 8 bytes): the claim is held to our caps first.
  checked_image_size(data, size, name);
  cv::Mat decoded;
  try {
    // The buffer is only read; the const_cast satisfies cv::Mat's constructor.
    const cv::Mat buffer(1, static_cast<int>(size), CV_8UC1, const_cast<uint8_t*>(data));
    decoded = cv::imdecode(buffer, flags);
  } catch (const cv::Exception& e) {
    throw Error(name + ": cannot decode the image (" + e.err + ")");
  }
  if (decoded.empty()) {
    throw Error(name + ": cannot decode " + std::to_string(size) +
                " bytes as an image (corrupt, truncated or an unsupported format)");
  }
  return decoded;
}

}  // namespace vit::io::detail
