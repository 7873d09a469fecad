#include "vit/data/mix.hpp"

#include <algorithm>
#include <cmath>

#include <torch/torch.h>

#include "vit/error.hpp"

namespace vit::data {

bool mixing_enabled(const AugmentConfig& config) {
  return config.mixup_alpha > 0.0 || config.cutmix_alpha > 0.0;
}

Mixed mix_batch(const at::Tensor& images, const at::Tensor& labels, int64_t num_classes,
                const AugmentConfig& config, Rng& rng) {
  if (!images.is_floating_point()) throw Error("mix_batch: expected float images");
  namespace F = torch::nn::functional;
  const auto one_hot = F::one_hot(labels, num_classes).to(images.scalar_type());  // (B, K)
  Mixed out{images, one_hot};
  if (!mixing_enabled(config) || images.size(0) < 2 || rng.uniform() >= config.mix_prob) return out;

  const bool use_cutmix =
      config.cutmix_alpha > 0.0 && (config.mixup_alpha <= 0.0 || rng.below(2) == 1);
  const double alpha = use_cutmix ? config.cutmix_alpha : config.mixup_alpha;
  double lam = rng.beta(alpha, alpha);
  const auto partner = images.flip(0);  // image B-1-i
  if (use_cutmix) {
    const int64_t h = images.size(2), w = images.size(3);
    const double cut = std::sqrt(1.0 - lam);
    const auto cut_h = static_cast<int64_t>(h * cut), cut_w = static_cast<int64_t>(w * cut);
    const auto cy = static_cast<int64_t>(rng.below(h)), cx = static_cast<int64_t>(rng.below(w));
    const int64_t y0 = std::clamp(cy - cut_h / 2, int64_t{0}, h);
    const int64_t y1 = std::clamp(cy + cut_h / 2, int64_t{0}, h);
    const int64_t x0 = std::clamp(cx - cut_w / 2, int64_t{0}, w);
    const int64_t x1 = std::clamp(cx + cut_w / 2, int64_t{0}, w);
    out.images = images.clone();
    using torch::indexing::Slice;
    out.images.index_put_({Slice(), Slice(), Slice(y0, y1), Slice(x0, x1)},
                          partner.index({Slice(), Slice(), Slice(y0, y1), Slice(x0, x1)}));
    // The box was clipped at the border: weight the targets by what was kept.
    lam = 1.0 - static_cast<double>((y1 - y0) * (x1 - x0)) / static_cast<double>(h * w);
  } else {
    out.images = images * lam + partner * (1.0 - lam);
  }
  out.targets = one_hot * lam + one_hot.flip(0) * (1.0 - lam);
  return out;
}

}  // namespace vit::data
