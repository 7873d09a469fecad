#include "vit/data/random_erasing.hpp"

#include <cmath>

#include <ATen/CPUGeneratorImpl.h>
#include <torch/torch.h>

#include "vit/error.hpp"

namespace vit::data {
namespace {

constexpr double kMinArea = 0.02;
constexpr double kMaxArea = 1.0 / 3.0;
constexpr double kMinAspect = 0.3;
constexpr int kTries = 10;

}  // namespace

at::Tensor random_erasing(const at::Tensor& images, double probability, Rng& rng, int64_t first_row,
                          int64_t global_rows) {
  if (!images.is_floating_point() || images.dim() != 4)
    throw Error("random_erasing: expected normalised float (B, C, H, W) images");
  if (probability <= 0) return images;
  const int64_t b = images.size(0), c = images.size(1), h = images.size(2), w = images.size(3);
  if (global_rows <= 0) global_rows = b;
  at::Tensor out = images.clone();
  const double log_low = std::log(kMinAspect), log_high = -log_low;
  for (int64_t row = 0; row < global_rows; ++row) {
    if (rng.uniform() >= probability) continue;
    for (int attempt = 0; attempt < kTries; ++attempt) {
      const double area = double(h * w) * (kMinArea + (kMaxArea - kMinArea) * rng.uniform());
      const double aspect = std::exp(log_low + (log_high - log_low) * rng.uniform());
      const auto eh = static_cast<int64_t>(std::nearbyint(std::sqrt(area * aspect)));
      const auto ew = static_cast<int64_t>(std::nearbyint(std::sqrt(area / aspect)));
      if (eh <= 0 || ew <= 0 || eh >= h || ew >= w) continue;
      const auto top = static_cast<int64_t>(rng.below(static_cast<uint64_t>(h - eh + 1)));
      const auto left = static_cast<int64_t>(rng.below(static_cast<uint64_t>(w - ew + 1)));
      const uint64_t seed = rng.next();
      const int64_t i = row - first_row;
      if (i >= 0 && i < b) {
        // The noise from a CPU generator seeded by the stream: the same
        // values on any device.
        auto generator = at::make_generator<at::CPUGeneratorImpl>(seed);
        const auto noise = at::normal(0.0, 1.0, {c, eh, ew}, generator, torch::kFloat32);
        out[i].narrow(1, top, eh).narrow(2, left, ew).copy_(noise);
      }
      break;
    }
  }
  return out;
}

}  // namespace vit::data
