// Shape key: D width (filters), F = C*P*P filter length, k components.
#include "vit/analysis/filter_pca.hpp"

#include <algorithm>

#include <torch/torch.h>

#include "vit/error.hpp"

namespace vit {
namespace {

constexpr const char* kFilterPcaWhere = "filter PCA";

at::Tensor filter_rows(const at::Tensor& weight) {
  if (!weight.defined() || (weight.dim() != 2 && weight.dim() != 4) || weight.size(0) < 2) {
    throw Error(std::string(kFilterPcaWhere) + ": weight is " +
                (weight.defined() ? c10::str(weight.sizes()) : std::string("undefined")) +
                "; expected patch_embed.proj.weight (D, C, P, P) with D >= 2 filters");
  }
  return weight.detach().to(torch::kCPU, torch::kDouble).reshape({weight.size(0), -1});  // (D, F)
}

// Flips each row of `components` (k, F) so that its largest-magnitude entry is positive.
at::Tensor canonical_signs(const at::Tensor& components) {
  const auto peak = components.abs().argmax(/*dim=*/1, /*keepdim=*/true);            // (k, 1)
  const auto sign = components.gather(/*dim=*/1, peak).sign().clamp_min(0) * 2 - 1;  // (k, 1): +-1
  return components * sign;
}

}  // namespace

FilterPca filter_pca(const at::Tensor& weight, int64_t count) {
  if (count < 1)
    throw Error(std::string(kFilterPcaWhere) + ": count " + std::to_string(count) + " is not >= 1");
  const auto rows = filter_rows(weight);                               // (D, F)
  const auto centred = rows - rows.mean(/*dim=*/0, /*keepdim=*/true);  // (D, F)
  // centred = U S V^T: the rows of V^T are the principal directions, S^2 / (D - 1)
  // the variances, already in falling order.
  const auto svd = at::linalg_svd(centred, /*full_matrices=*/false);
  const auto& singular = std::get<1>(svd);  // (min(D, F))
  const auto& vt = std::get<2>(svd);        // (min(D, F), F)
  const int64_t k = std::min({count, rows.size(0) - 1, rows.size(1)});
  const auto variance = singular.square() / static_cast<double>(rows.size(0) - 1);
  const double total = variance.sum().item<double>();
  FilterPca pca;
  pca.components = canonical_signs(vt.slice(/*dim=*/0, 0, k));
  pca.explained_variance = variance.slice(/*dim=*/0, 0, k);
  // All filters equal: no variance anywhere, and no share of it either.
  pca.explained_variance_ratio =
      total > 0 ? pca.explained_variance / total : torch::zeros_like(pca.explained_variance);
  return pca;
}

}  // namespace vit
