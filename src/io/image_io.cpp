// OpenCV stays inside src/io, so callers never see cv::Mat. Nothing here calls
// cv::setNumThreads or keeps a cache, so decoding and resizing are thread-safe.
#include "vit/io/image_io.hpp"

#include <fstream>
#include <initializer_list>
#include <limits>
#include <system_error>

#include <ATen/Parallel.h>
#include <torch/torch.h>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include "mat.hpp"
#include "vit/error.hpp"

namespace vit::io {
namespace {

constexpr int64_t kMaxSide = 16384;  // pixels; far above any model input, well inside cv::Mat's int

void check_side(int64_t side, const std::string& where) {
  if (side > kMaxSide) {
    throw Error(where + ": asked for side " + std::to_string(side) + ", expected at most " +
                std::to_string(kMaxSide));
  }
}

void check_request(int64_t channels, int64_t side, const std::string& where) {
  check_side(side, where);
  if (channels != 1 && channels != 3) {
    throw Error(where + ": asked for " + std::to_string(channels) +
                " channels, expected 1 (gray) or 3 (RGB)");
  }
  if (side < 0) {
    throw Error(where + ": asked for side " + std::to_string(side) +
                ", expected a positive size (or 0 to keep the image's own)");
  }
}

// Averaging pixel areas is the alias-free way to shrink; when either side
// grows, bilinear interpolation avoids the blockiness of area resampling.
int interpolation_for(int64_t height, int64_t width, int64_t side) {
  return (side <= height && side <= width) ? cv::INTER_AREA : cv::INTER_LINEAR;
}

}  // namespace

std::vector<uint8_t> read_file_bytes(const std::filesystem::path& path) {
  std::error_code error;
  if (!std::filesystem::exists(path, error)) throw Error(path.string() + ": no such file");
  if (std::filesystem::is_directory(path, error)) {
    throw Error(path.string() + ": is a folder, expected an image file");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(path.string() + ": cannot open the file for reading");
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)),
                             std::istreambuf_iterator<char>());
  if (in.bad()) throw Error(path.string() + ": read error");
  return bytes;
}

at::Tensor read_image(const std::filesystem::path& path, int64_t channels, int64_t side) {
  check_request(channels, side, path.string());
  const std::vector<uint8_t> bytes = read_file_bytes(path);
  return decode_image(bytes.data(), bytes.size(), channels, side, path.string());
}

at::Tensor decode_image(const uint8_t* data, size_t size, int64_t channels, int64_t side,
                        const std::string& name) {
  check_request(channels, side, name);
  // ANYDEPTH|ANYCOLOR keeps 16-bit and alpha so the scaling and channel rules
  // below are ours, and unlike IMREAD_UNCHANGED it still applies EXIF rotation.
  const cv::Mat decoded =
      detail::decode_mat(data, size, cv::IMREAD_ANYDEPTH | cv::IMREAD_ANYCOLOR, name);
  const cv::Mat converted = detail::to_uint8_channels(decoded, static_cast<int>(channels));
  const at::Tensor image = detail::from_mat(converted);  // (C, H, W)
  return side == 0 ? image : resize_image(image, side);
}

at::Tensor decode_image(const std::vector<uint8_t>& bytes, int64_t channels, int64_t side,
                        const std::string& name) {
  return decode_image(bytes.data(), bytes.size(), channels, side, name);
}

at::Tensor resize_image(const at::Tensor& image, int64_t side) {
  detail::check_image(image, "resize_image");
  return resize_batch(image.unsqueeze(0), side).squeeze(0);
}

at::Tensor resize_batch(const at::Tensor& images, int64_t side) {
  if (!images.defined() || images.scalar_type() != torch::kUInt8 || images.dim() != 4 ||
      images.size(2) <= 0 || images.size(3) <= 0) {
    throw Error("resize_batch: images are " +
                (images.defined() ? std::string(c10::toString(images.scalar_type())) + " " +
                                        c10::str(images.sizes())
                                  : std::string("undefined")) +
                ", expected uint8 (B, C, H, W) with H, W > 0");
  }
  if (side <= 0) {
    throw Error("resize_batch: side " + std::to_string(side) + ", expected a positive size");
  }
  check_side(side, "resize_batch");
  const int64_t height = images.size(2);
  const int64_t width = images.size(3);
  if (height == side && width == side) return images;

  // Every (H, W) plane is resized on its own: resampling is per channel, and
  // the planes of a contiguous NCHW tensor need no repacking.
  const at::Tensor source = images.to(torch::kCPU).contiguous();
  const int64_t planes = source.size(0) * source.size(1);
  at::Tensor result = torch::empty({source.size(0), source.size(1), side, side}, torch::kUInt8);
  const uint8_t* in = source.data_ptr<uint8_t>();
  uint8_t* out = result.data_ptr<uint8_t>();
  const int interpolation = interpolation_for(height, width, side);
  // Each task is a few thousand small resizes, so at::parallel_for's threads
  // amortise their start-up; OpenCV runs images this small on the calling thread.
  at::parallel_for(0, planes, /*grain_size=*/256, [&](int64_t begin, int64_t end) {
    for (int64_t p = begin; p < end; ++p) {
      const cv::Mat from(static_cast<int>(height), static_cast<int>(width), CV_8UC1,
                         const_cast<uint8_t*>(in + p * height * width));
      cv::Mat to(static_cast<int>(side), static_cast<int>(side), CV_8UC1, out + p * side * side);
      cv::resize(from, to, to.size(), 0, 0, interpolation);
    }
  });
  return result.to(images.device());
}

std::vector<uint8_t> encode_png(const at::Tensor& image) {
  cv::Mat mat = detail::to_mat(image, "encode_png");
  if (mat.channels() == 3) cv::cvtColor(mat, mat, cv::COLOR_RGB2BGR);
  std::vector<uint8_t> bytes;
  try {
    if (!cv::imencode(".png", mat, bytes)) throw Error("encode_png: PNG encoder failed");
  } catch (const cv::Exception& e) {
    throw Error("encode_png: PNG encoder failed (" + e.err + ")");
  }
  return bytes;
}

std::vector<uint8_t> write_png(const std::filesystem::path& path, const at::Tensor& image) {
  detail::check_image(image, path.string());
  const std::vector<uint8_t> bytes = encode_png(image);
  const std::filesystem::path parent = path.parent_path();
  std::error_code error;
  if (!parent.empty()) {
    std::filesystem::create_directories(parent, error);
    if (error) {
      throw Error(path.string() + ": cannot create folder " + parent.string() + " (" +
                  error.message() + ")");
    }
  }
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) throw Error(path.string() + ": cannot open for writing");
  out.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
  out.close();  // flushes, so a full disk shows up here
  if (!out) {
    throw Error(path.string() + ": write failed after " + std::to_string(bytes.size()) +
                " bytes (disk full?)");
  }
  return bytes;
}

at::Tensor to_uint8(const at::Tensor& image) {
  return image.detach()
      .to(torch::kFloat)
      .nan_to_num(0.0)
      .clamp(0.0, 1.0)
      .mul(255.0)
      .round()
      .to(torch::kUInt8);
}

at::Tensor unnormalize(const at::Tensor& image, const std::vector<double>& mean,
                       const std::vector<double>& std) {
  if (!image.defined() || (image.dim() != 3 && image.dim() != 4) || !image.is_floating_point()) {
    throw Error("unnormalize: image is " +
                (image.defined() ? std::string(c10::toString(image.scalar_type())) + " " +
                                       c10::str(image.sizes())
                                 : std::string("undefined")) +
                ", expected float (C, H, W) or (B, C, H, W)");
  }
  const int64_t channels = image.size(-3);
  auto per_channel = [&](const std::vector<double>& values, const char* what) {
    if (values.size() != 1 && static_cast<int64_t>(values.size()) != channels) {
      throw Error(std::string("unnormalize: ") + what + " has " + std::to_string(values.size()) +
                  " values, expected 1 or " + std::to_string(channels) + " (one per channel)");
    }
    std::vector<double> expanded(channels, values[0]);
    if (values.size() != 1) expanded = values;
    return torch::tensor(expanded, torch::TensorOptions().dtype(image.scalar_type()))
        .to(image.device())
        .view({channels, 1, 1});  // broadcasts over (..., C, H, W)
  };
  const at::Tensor m = per_channel(mean, "mean");
  const at::Tensor s = per_channel(std, "std");
  return image.detach().mul(s).add(m).clamp(0.0, 1.0);
}

}  // namespace vit::io
