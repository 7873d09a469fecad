// Shape key: L layers, n images, B batch, N tokens, F prefix tokens, R registers,
// P patches, D width, K classes.
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

at::Tensor patch_token_norms(const at::Tensor& layer, int64_t prefix_tokens) {
  if (layer.dim() != 3 || layer.size(1) <= prefix_tokens)
    throw Error("token norms: a layer of shape " + c10::str(layer.sizes()) +
                ", expected (B, N, D) with " + std::to_string(prefix_tokens) +
                " prefix tokens and at least one patch");
  return layer.slice(/*dim=*/1, /*start=*/prefix_tokens).norm(2, /*dim=*/{2}).reshape({-1});
}

at::Tensor register_token_norms(const at::Tensor& layer, int64_t registers, int64_t first) {
  if (layer.dim() != 3 || layer.size(1) <= first + registers)
    throw Error("token norms: a layer of shape " + c10::str(layer.sizes()) +
                ", expected (B, N, D) with " + std::to_string(first) + " tokens before " +
                std::to_string(registers) + " registers");
  return layer.slice(/*dim=*/1, /*start=*/first, /*end=*/first + registers)
      .norm(2, /*dim=*/{2})
      .reshape({-1});  // (B*R)
}

namespace {

// One layer's summary of `norms`, "high" counted against `patch_median`.
void summarize(TokenNormSummary& summary, const at::Tensor& norms, double patch_median) {
  summary.median.push_back(linear_quantile(norms, 0.5));
  summary.p99.push_back(linear_quantile(norms, 0.99));
  summary.max.push_back(norms.max().item<double>());
  summary.high.push_back(norms.gt(kHighNormFactor * patch_median).sum().item<int64_t>());
}

}  // namespace

// The final norm, the pooling and the head on every layer.
std::vector<at::Tensor> lens_logits(VisionTransformer& model, const ResidualStream& stream) {
  torch::NoGradGuard no_grad;
  std::vector<at::Tensor> logits;
  for (const auto& layer : stream.layers)
    logits.push_back(model->stream_logits(layer));  // (B, K)
  return logits;
}

LensResult logit_lens(VisionTransformer& model, const ImageBatches& images,
                      const at::Tensor& labels) {
  if (images.count < 1) throw Error("logit lens: no images, expected at least one");
  if (labels.defined() && (labels.dim() != 1 || labels.size(0) != images.count))
    throw Error("logit lens: labels of shape " + c10::str(labels.sizes()) + " for " +
                std::to_string(images.count) + " images");
  const ModelConfig& m = model->config();
  const int64_t registers = m.registers;
  // The class and distillation tokens come before the registers.
  const int64_t before_registers = m.prefix_tokens() - registers;
  // A backbone without a head (num_classes 0) has no logits to read: its norms alone.
  const bool has_head = m.num_classes > 0;
  std::vector<std::vector<at::Tensor>> logits, norms, register_norms;  // [layer][batch]
  images.for_each([&](int64_t, const at::Tensor& inputs) {
    const ResidualStream stream = residual_stream(model, inputs);
    const size_t layers = stream.layers.size();
    const auto layer_logits = has_head ? lens_logits(model, stream) : std::vector<at::Tensor>();
    logits.resize(has_head ? layers : 0);
    norms.resize(layers);
    register_norms.resize(layers);
    for (size_t l = 0; l < layers; ++l) {
      const auto& layer = stream.layers[l];
      if (has_head) logits[l].push_back(layer_logits[l].to(torch::kCPU, torch::kFloat));
      norms[l].push_back(
          patch_token_norms(layer, m.prefix_tokens()).to(torch::kCPU, torch::kFloat));
      if (registers > 0)
        register_norms[l].push_back(register_token_norms(layer, registers, before_registers)
                                        .to(torch::kCPU, torch::kFloat));
    }
  });
  LensResult result;
  if (has_head) {
    std::vector<at::Tensor> per_layer;
    for (const auto& batches : logits)
      per_layer.push_back(torch::cat(batches));  // (n, K)
    result.logits = torch::stack(per_layer);     // (L+1, n, K)
    const auto last = result.logits[-1].argmax(/*dim=*/1);
    for (int64_t l = 0; l < result.logits.size(0); ++l) {
      result.agreement.push_back(top1_fraction(result.logits[l], last));
      if (labels.defined())
        result.accuracy.push_back(top1_fraction(result.logits[l], labels.cpu()));
    }
  }
  for (size_t l = 0; l < norms.size(); ++l) {
    const auto layer_norms = torch::cat(norms[l]);
    const double median = linear_quantile(layer_norms, 0.5);
    summarize(result.norms, layer_norms, median);
    if (registers > 0) summarize(result.register_norms, torch::cat(register_norms[l]), median);
  }
  return result;
}

}  // namespace vit
