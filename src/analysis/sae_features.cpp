// Shape key: F features, M examples a feature, B images, P patches, D width.
#include "vit/analysis/sae_features.hpp"

#include <algorithm>
#include <numeric>
#include <string>

#include <torch/torch.h>

#include "vit/analysis/residual_stream.hpp"
#include "vit/error.hpp"

namespace vit {

SaeFeatureStatistics sae_feature_statistics(VisionTransformer& model, const SparseAutoencoder& sae,
                                            int64_t layer, const ImageBatches& images,
                                            int64_t examples) {
  const auto& cfg = model->config();
  if (layer < 0 || layer > cfg.depth)
    throw Error("sparse autoencoder features: layer " + std::to_string(layer) + ", expected 0.." +
                std::to_string(cfg.depth));
  if (sae.width() != cfg.dim)
    throw Error("sparse autoencoder features: an SAE of width " + std::to_string(sae.width()) +
                " on a model of width " + std::to_string(cfg.dim));
  if (examples < 1)
    throw Error("sparse autoencoder features: " + std::to_string(examples) +
                " examples a feature, expected >= 1");
  torch::NoGradGuard no_grad;
  const int64_t features = sae.features();
  const auto doubles = torch::TensorOptions().dtype(torch::kDouble);
  auto fired = torch::zeros({features}, doubles);
  auto total = torch::zeros({features}, doubles);
  // The running best M (activation, image, patch) of each feature.
  auto best = torch::zeros({0, features});
  auto best_image = torch::zeros({0, features}, torch::kLong);
  auto best_patch = torch::zeros({0, features}, torch::kLong);
  int64_t tokens = 0;
  images.for_each([&](int64_t first, const at::Tensor& inputs) {
    const auto stream = residual_stream(model, inputs);
    const auto patches = model->patch_tokens(stream.layers[static_cast<size_t>(layer)]);
    const int64_t batch = patches.size(0), count = patches.size(1);
    const auto z = sae.encode(patches.reshape({-1, cfg.dim}).to(sae.W_enc.device(), torch::kFloat))
                       .cpu()
                       .view({batch, count, features});  // (B, P, F)
    fired += z.gt(0).sum(at::IntArrayRef{0, 1}).to(torch::kDouble);
    total += z.sum(at::IntArrayRef{0, 1}).to(torch::kDouble);
    tokens += batch * count;
    const auto [strongest, patch] = z.max(1);  // (B, F): each image's strongest patch
    const auto image =
        (torch::arange(batch, torch::kLong) + first).unsqueeze(1).expand({batch, features});
    const auto values = torch::cat({best, strongest});
    const auto [kept, rows] = values.topk(std::min(examples, values.size(0)), 0);  // (M, F)
    best_image = torch::cat({best_image, image}).gather(0, rows);
    best_patch = torch::cat({best_patch, patch}).gather(0, rows);
    best = kept;
  });
  SaeFeatureStatistics s;
  s.tokens = tokens;
  s.frequency = fired / static_cast<double>(std::max<int64_t>(tokens, 1));
  s.mean_activation = total / fired.clamp_min(1);
  // Rows beyond the images seen, and examples where the feature did not fire.
  const int64_t missing = examples - best.size(0);
  s.top_activation =
      torch::cat({best.to(torch::kDouble), torch::zeros({missing, features}, doubles)});
  s.top_image = torch::cat({best_image, torch::full({missing, features}, -1, torch::kLong)});
  s.top_patch = torch::cat({best_patch, torch::full({missing, features}, -1, torch::kLong)});
  const auto silent = s.top_activation.le(0);
  s.top_image.masked_fill_(silent, -1);
  s.top_patch.masked_fill_(silent, -1);
  s.top_activation.masked_fill_(silent, 0.0);
  return s;
}

std::vector<int64_t> most_frequent_features(const SaeFeatureStatistics& statistics, int64_t count) {
  const auto frequency = statistics.frequency.contiguous();
  const double* f = frequency.data_ptr<double>();
  std::vector<int64_t> order(static_cast<size_t>(frequency.size(0)));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [f](int64_t a, int64_t b) { return f[a] > f[b]; });
  std::vector<int64_t> chosen;
  for (const int64_t feature : order) {
    if (static_cast<int64_t>(chosen.size()) >= count || f[feature] <= 0) break;
    chosen.push_back(feature);
  }
  return chosen;
}

}  // namespace vit
