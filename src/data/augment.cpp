#include "vit/data/augment.hpp"

#include <vector>

#include <torch/torch.h>

#include "vit/data/mix.hpp"
#include "vit/data/rand_augment.hpp"
#include "vit/device.hpp"
#include "vit/error.hpp"

namespace vit::data {

namespace {

// Reflects a coordinate that may lie up to size - 1 outside [0, size) back
// inside, without repeating the edge pixel (torch's reflection padding).
int64_t reflect(int64_t i, int64_t size) {
  if (i < 0) return -i;
  if (i >= size) return 2 * (size - 1) - i;
  return i;
}

}  // namespace

at::Tensor random_crop_flip(const at::Tensor& images, int64_t padding, PaddingMode mode, bool hflip,
                            Rng& rng) {
  if (images.dim() != 4) throw Error("random_crop_flip: expected (B, C, H, W) images");
  const int64_t b = images.size(0), c = images.size(1), h = images.size(2), w = images.size(3);
  if (padding < 0) throw Error("data.augment.crop_padding: " + std::to_string(padding) + " < 0");
  if (mode == PaddingMode::kReflect && padding >= std::min(h, w)) {
    throw Error("data.augment.crop_padding: reflect padding " + std::to_string(padding) +
                " must be smaller than the image side " + std::to_string(std::min(h, w)));
  }
  if (b == 0 || (padding == 0 && !hflip)) return images;

  // Per image, drawn on the CPU: the source row of each output row and the
  // source column of each output column (the flip reverses the columns). With
  // zero padding the source is the batch padded with zeros, so every crop lies
  // inside it; with reflection the source is the batch itself.
  const bool zeros = mode == PaddingMode::kZeros;
  const int64_t src_w = zeros ? w + 2 * padding : w;
  std::vector<int64_t> rows(b * h), cols(b * w);
  for (int64_t i = 0; i < b; ++i) {
    const auto dy = static_cast<int64_t>(rng.below(2 * padding + 1)) - padding;
    const auto dx = static_cast<int64_t>(rng.below(2 * padding + 1)) - padding;
    const bool flip = hflip && rng.below(2) == 1;
    for (int64_t y = 0; y < h; ++y)
      rows[i * h + y] = zeros ? dy + padding + y : reflect(dy + y, h);
    for (int64_t x = 0; x < w; ++x) {
      const int64_t from = dx + (flip ? w - 1 - x : x);
      cols[i * w + x] = zeros ? from + padding : reflect(from, w);
    }
  }
  const auto device = images.device();
  const auto row_index = to_device(torch::from_blob(rows.data(), {b, h, 1}, torch::kInt64), device);
  const auto col_index = to_device(torch::from_blob(cols.data(), {b, 1, w}, torch::kInt64), device);
  const auto source =
      zeros ? torch::constant_pad_nd(images, {padding, padding, padding, padding}, 0) : images;
  const auto index = (row_index * src_w + col_index)  // (B, H, W) offsets into one source plane
                         .view({b, 1, h * w})
                         .expand({b, c, h * w});
  return source.reshape({b, c, -1}).gather(2, index).view({b, c, h, w});
}

Augmented augment_batch(const at::Tensor& images, const at::Tensor& labels, int64_t num_classes,
                        const AugmentConfig& config, Rng& rng) {
  Augmented out;
  out.images =
      random_crop_flip(images, config.crop_padding, config.padding_mode, config.hflip, rng);
  const bool mixing = mixing_enabled(config);
  if (config.randaugment_ops == 0 && !mixing) return out;
  out.images = out.images.to(torch::kFloat32).div_(255.0);
  if (config.randaugment_ops > 0) {
    out.images =
        rand_augment(out.images, config.randaugment_ops, config.randaugment_magnitude, rng);
  }
  if (mixing) {
    auto mixed = mix_batch(out.images, labels, num_classes, config, rng);
    out.images = std::move(mixed.images);
    out.targets = std::move(mixed.targets);
  }
  return out;
}

}  // namespace vit::data
