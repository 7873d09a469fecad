#pragma once
// The trainer's normalisation of a batch: uint8 pixels p (or floats x in
// [0, 1] after augmentation) to (p / 255 - mean) / std per channel, on the
// batch's device. Both batch sources (data/batch_loader, data/stream_loader) use it.
// Key: B images, C channels, S x S pixels.
#include <cstdint>
#include <vector>

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

namespace vit::data {

class Normalizer {
 public:
  // mean and std: C values, or one for every channel. Throws vit::Error naming
  // data.mean / data.std for another count or a std that is not positive.
  Normalizer(const std::vector<double>& mean, const std::vector<double>& std, int64_t channels,
             c10::Device device);

  // uint8 (B, C, S, S), or float in [0, 1] -> float, normalised.
  at::Tensor normalize(const at::Tensor& images) const;
  // uint8 -> float in [0, 1]; a float batch is returned as it is.
  static at::Tensor unit_range(const at::Tensor& images);
  // The inverse of normalize(): normalised float -> float in [0, 1].
  at::Tensor unnormalize(const at::Tensor& normalized) const;

  // Per channel, for code that normalises pixel by pixel: p * scale - shift.
  const std::vector<float>& channel_scale() const { return channel_scale_; }
  const std::vector<float>& channel_shift() const { return channel_shift_; }

 private:
  at::Tensor scale_;  // float (1, C, 1, 1): 1 / (255 * std)
  at::Tensor shift_;  // float (1, C, 1, 1): mean / std
  std::vector<float> channel_scale_, channel_shift_;
};

}  // namespace vit::data
