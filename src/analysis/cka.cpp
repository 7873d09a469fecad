// Shape key: L layers, n images, B batch, N tokens, D width.
#include "vit/analysis/cka.hpp"

#include <algorithm>
#include <cmath>

#include <torch/torch.h>

#include "vit/analysis/residual_stream.hpp"
#include "vit/error.hpp"

namespace vit {

at::Tensor centred_gram(const at::Tensor& features) {
  if (features.dim() < 2 || features.size(0) < 2)
    throw Error("CKA: features of shape " + c10::str(features.sizes()) +
                ", expected (n, ...) with at least two images");
  const auto x = features.reshape({features.size(0), -1}).to(torch::kDouble);  // (n, F)
  const auto centred = x - x.mean(/*dim=*/0, /*keepdim=*/true);
  return torch::mm(centred, centred.t());  // (n, n)
}

double linear_cka(const at::Tensor& gram_x, const at::Tensor& gram_y) {
  if (gram_x.dim() != 2 || gram_x.sizes() != gram_y.sizes() || gram_x.size(0) != gram_x.size(1))
    throw Error("CKA: Grams of shapes " + c10::str(gram_x.sizes()) + " and " +
                c10::str(gram_y.sizes()) + ", expected the same (n, n)");
  const double norms = gram_x.norm().item<double>() * gram_y.norm().item<double>();
  if (norms == 0) return 0.0;
  return (gram_x * gram_y).sum().item<double>() / norms;
}

at::Tensor cka_matrix(const std::vector<at::Tensor>& rows, const std::vector<at::Tensor>& columns) {
  auto matrix = torch::zeros(
      {static_cast<int64_t>(rows.size()), static_cast<int64_t>(columns.size())}, torch::kDouble);
  for (size_t i = 0; i < rows.size(); ++i)
    for (size_t j = 0; j < columns.size(); ++j)
      matrix[static_cast<int64_t>(i)][static_cast<int64_t>(j)] = linear_cka(rows[i], columns[j]);
  return matrix;
}

// The Gram form keeps memory at (n, n) per layer whatever the width.
std::vector<at::Tensor> layer_grams(VisionTransformer& model, const ImageBatches& images,
                                    int64_t budget_bytes) {
  const ModelConfig& m = model->config();
  const int64_t layers = m.depth + 1;
  const int64_t per_layer = images.count * m.tokens() * m.dim * int64_t{sizeof(float)};
  const int64_t at_once =
      std::clamp<int64_t>(budget_bytes / std::max<int64_t>(per_layer, 1), 1, layers);
  std::vector<at::Tensor> grams;
  for (int64_t first = 0; first < layers; first += at_once) {
    const int64_t last = std::min(first + at_once, layers);
    std::vector<std::vector<at::Tensor>> features(static_cast<size_t>(last - first));
    images.for_each([&](int64_t, const at::Tensor& inputs) {
      const ResidualStream stream = residual_stream(model, inputs);
      for (int64_t l = first; l < last; ++l)
        features[l - first].push_back(stream.layers[l].to(torch::kCPU, torch::kFloat));
    });
    for (auto& f : features) {
      grams.push_back(centred_gram(torch::cat(f)));
      f.clear();
    }
  }
  return grams;
}

}  // namespace vit
