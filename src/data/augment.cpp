#include "vit/data/augment.hpp"

#include <vector>

#include <torch/torch.h>

#include "vit/data/mix.hpp"
#include "vit/data/rand_augment.hpp"
#include "vit/error.hpp"

namespace vit::data {

namespace {

// Maps padded coordinates (may be < 0 or >= size) back into [0, size).
at::Tensor source_index(const at::Tensor& coord, int64_t size, Padding mode) {
  if (mode == Padding::kReflect) {
    // Mirror without repeating the edge pixel, like torch's reflection padding.
    auto mirrored = coord.abs();
    return torch::where(mirrored >= size, 2 * (size - 1) - mirrored, mirrored);
  }
  return coord.clamp(0, size - 1);
}

}  // namespace

Padding parse_padding(const std::string& mode) {
  if (mode == "zeros") return Padding::kZeros;
  if (mode == "reflect") return Padding::kReflect;
  throw Error("data.augment.padding_mode: \"" + mode + "\" is not one of zeros, reflect");
}

at::Tensor random_crop_flip(const at::Tensor& images, int64_t padding, Padding mode, bool hflip,
                            Rng& rng) {
  if (images.dim() != 4) throw Error("random_crop_flip: expected (B, C, H, W) images");
  const int64_t b = images.size(0), c = images.size(1), h = images.size(2), w = images.size(3);
  if (padding < 0) throw Error("data.augment.crop_padding: " + std::to_string(padding) + " < 0");
  if (mode == Padding::kReflect && padding >= std::min(h, w)) {
    throw Error("data.augment.crop_padding: reflect padding " + std::to_string(padding) +
                " must be smaller than the image side " + std::to_string(std::min(h, w)));
  }
  if (b == 0 || (padding == 0 && !hflip)) return images;

  // Per image: the crop's top-left corner in padded coordinates, and a flip bit.
  std::vector<int64_t> draws(3 * b);
  for (int64_t i = 0; i < b; ++i) {
    draws[3 * i] = static_cast<int64_t>(rng.below(2 * padding + 1)) - padding;
    draws[3 * i + 1] = static_cast<int64_t>(rng.below(2 * padding + 1)) - padding;
    draws[3 * i + 2] = hflip ? static_cast<int64_t>(rng.below(2)) : 0;
  }
  const auto device = images.device();
  const auto opts = torch::TensorOptions().dtype(torch::kInt64).device(device);
  const auto params = torch::from_blob(draws.data(), {b, 3}, torch::kInt64).to(device);
  const auto dy = params.select(1, 0).unsqueeze(1), dx = params.select(1, 1).unsqueeze(1);
  const auto flip = params.select(1, 2).unsqueeze(1).to(torch::kBool);
  const auto ys = torch::arange(h, opts).unsqueeze(0);
  const auto xs = torch::arange(w, opts).unsqueeze(0);
  const auto rows = dy + ys;                                    // (B, H) padded coordinates
  const auto cols = dx + torch::where(flip, (w - 1) - xs, xs);  // (B, W)

  const auto index = (source_index(rows, h, mode).unsqueeze(2) * w +
                      source_index(cols, w, mode).unsqueeze(1))  // (B, H, W)
                         .view({b, 1, h * w})
                         .expand({b, c, h * w});
  auto out = images.reshape({b, c, h * w}).gather(2, index).view({b, c, h, w});
  if (mode == Padding::kZeros && padding > 0) {
    const auto outside = ((rows < 0) | (rows >= h)).unsqueeze(2) |
                         ((cols < 0) | (cols >= w)).unsqueeze(1);  // (B, H, W)
    out.masked_fill_(outside.unsqueeze(1), 0);
  }
  return out;
}

Augmented augment_batch(const at::Tensor& images, const at::Tensor& labels, int64_t num_classes,
                        const AugmentConfig& config, Rng& rng) {
  Augmented out;
  out.images = random_crop_flip(images, config.crop_padding, parse_padding(config.padding_mode),
                                config.hflip, rng);
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
