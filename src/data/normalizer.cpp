#include "vit/data/normalizer.hpp"

#include <string>

#include <torch/torch.h>

#include "vit/error.hpp"

namespace vit::data {
namespace {

std::vector<double> per_channel(const std::vector<double>& values, int64_t channels,
                                const char* name) {
  if (static_cast<int64_t>(values.size()) == channels) return values;
  if (values.size() == 1) return std::vector<double>(channels, values.front());
  // One value serves every channel, so gray images take 1 and RGB 1 or 3.
  const std::string expected =
      channels == 1 ? "1 value" : "1 or " + std::to_string(channels) + " values";
  throw Error(std::string("data.") + name + ": " + std::to_string(values.size()) + " values for " +
              std::to_string(channels) + "-channel images, expected " + expected);
}

}  // namespace

Normalizer::Normalizer(const std::vector<double>& mean_values,
                       const std::vector<double>& std_values, int64_t channels,
                       c10::Device device) {
  const auto mean = per_channel(mean_values, channels, "mean");
  const auto std = per_channel(std_values, channels, "std");
  std::vector<double> scale(channels), shift(channels);
  for (int64_t c = 0; c < channels; ++c) {
    if (!(std[c] > 0.0))
      throw Error("data.std: value " + std::to_string(std[c]) + " is not positive");
    scale[c] = 1.0 / (255.0 * std[c]);
    shift[c] = mean[c] / std[c];
    channel_scale_.push_back(static_cast<float>(scale[c]));
    channel_shift_.push_back(static_cast<float>(shift[c]));
  }
  const auto opts = torch::TensorOptions().dtype(torch::kFloat32).device(device);
  scale_ = torch::tensor(scale, torch::kFloat64).to(opts).view({1, channels, 1, 1});
  shift_ = torch::tensor(shift, torch::kFloat64).to(opts).view({1, channels, 1, 1});
}

at::Tensor Normalizer::normalize(const at::Tensor& images) const {
  // uint8 pixels p: (p / 255 - mean) / std = p * scale - shift.
  if (images.scalar_type() == torch::kUInt8) {
    return images.to(torch::kFloat32).mul_(scale_).sub_(shift_);
  }
  return images.mul(scale_ * 255.0).sub_(shift_);
}

at::Tensor Normalizer::unnormalize(const at::Tensor& normalized) const {
  return normalized.add(shift_).div_(scale_ * 255.0);
}

at::Tensor Normalizer::unit_range(const at::Tensor& images) {
  if (images.is_floating_point()) return images;
  return images.to(torch::kFloat32).div_(255.0);
}

}  // namespace vit::data
