// Shape key: L layers, n images, B batch, N tokens, P patches, D width, K classes.
#include "vit/analysis/logit_lens.hpp"

#include <cmath>

#include <torch/torch.h>

#include "vit/error.hpp"

namespace vit {
namespace {

constexpr double kHighNormFactor = 4.0;  // Darcet et al.'s outliers sit far above this

// Fraction of rows whose top-1 is `classes`.
double top1_fraction(const at::Tensor& logits, const at::Tensor& classes) {
  return logits.argmax(/*dim=*/1).eq(classes).to(torch::kDouble).mean().item<double>();
}

}  // namespace

double linear_quantile(const at::Tensor& values, double q) {
  if (!values.defined() || values.numel() == 0)
    throw Error("quantile: no values, expected at least one");
  if (!(q >= 0.0 && q <= 1.0))
    throw Error("quantile: q = " + std::to_string(q) + ", expected a value in [0, 1]");
  const auto sorted = std::get<0>(values.reshape({-1}).to(torch::kDouble).sort());
  const double position = q * static_cast<double>(sorted.numel() - 1);
  const auto below = static_cast<int64_t>(std::floor(position));
  const auto above = std::min<int64_t>(below + 1, sorted.numel() - 1);
  const double low = sorted[below].item<double>(), high = sorted[above].item<double>();
  return low + (position - static_cast<double>(below)) * (high - low);
}

at::Tensor patch_token_norms(const at::Tensor& layer) {
  if (layer.dim() != 3 || layer.size(1) < 2)
    throw Error("token norms: a layer of shape " + c10::str(layer.sizes()) +
                ", expected (B, N, D) with a class token and at least one patch");
  return layer.slice(/*dim=*/1, /*start=*/1).norm(2, /*dim=*/{2}).reshape({-1});  // (B*P)
}

std::vector<at::Tensor> lens_logits(VisionTransformer& model, const ResidualStream& stream) {
  torch::NoGradGuard no_grad;
  std::vector<at::Tensor> logits;
  for (const auto& layer : stream.layers)
    logits.push_back(model->forward_head(layer));  // (B, K)
  return logits;
}

LensResult logit_lens(VisionTransformer& model, const ImageBatches& images,
                      const at::Tensor& labels) {
  if (images.count < 1) throw Error("logit lens: no images, expected at least one");
  if (labels.defined() && (labels.dim() != 1 || labels.size(0) != images.count))
    throw Error("logit lens: labels of shape " + c10::str(labels.sizes()) + " for " +
                std::to_string(images.count) + " images");
  std::vector<std::vector<at::Tensor>> logits, norms;  // [layer][batch]
  images.for_each([&](int64_t, const at::Tensor& inputs) {
    const ResidualStream stream = residual_stream(model, inputs);
    const auto layer_logits = lens_logits(model, stream);
    logits.resize(layer_logits.size());
    norms.resize(layer_logits.size());
    for (size_t l = 0; l < layer_logits.size(); ++l) {
      logits[l].push_back(layer_logits[l].to(torch::kCPU, torch::kFloat));
      norms[l].push_back(patch_token_norms(stream.layers[l]).to(torch::kCPU, torch::kFloat));
    }
  });
  LensResult result;
  std::vector<at::Tensor> per_layer;
  for (const auto& batches : logits)
    per_layer.push_back(torch::cat(batches));  // (n, K)
  result.logits = torch::stack(per_layer);     // (L+1, n, K)
  const auto last = result.logits[-1].argmax(/*dim=*/1);
  for (int64_t l = 0; l < result.logits.size(0); ++l) {
    result.agreement.push_back(top1_fraction(result.logits[l], last));
    if (labels.defined()) result.accuracy.push_back(top1_fraction(result.logits[l], labels.cpu()));
    const auto layer_norms = torch::cat(norms[static_cast<size_t>(l)]);
    const double median = linear_quantile(layer_norms, 0.5);
    result.norms.median.push_back(median);
    result.norms.p99.push_back(linear_quantile(layer_norms, 0.99));
    result.norms.max.push_back(layer_norms.max().item<double>());
    result.norms.high.push_back(layer_norms.gt(kHighNormFactor * median).sum().item<int64_t>());
  }
  return result;
}

}  // namespace vit
