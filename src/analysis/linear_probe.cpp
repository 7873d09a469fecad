// Shape key: L layers, n images, D width, K classes.
#include "vit/analysis/linear_probe.hpp"

#include <torch/torch.h>

#include "vit/analysis/residual_stream.hpp"
#include "vit/error.hpp"

namespace vit {
namespace {

// L-BFGS iterations: the validation accuracy of the demo's probes is settled
// well before (a 5000-image probe of 128 features converges in ~100).
constexpr int kMaxIterations = 200;

void check_probe_inputs(const at::Tensor& features, const at::Tensor& labels, int64_t classes,
                        double l2) {
  if (!(l2 >= 0)) throw Error("linear probe: l2 = " + std::to_string(l2) + ", expected >= 0");
  if (features.dim() != 2 || features.size(0) < 1)
    throw Error("linear probe: features of shape " + c10::str(features.sizes()) +
                ", expected (n, D) with n >= 1");
  if (labels.dim() != 1 || labels.size(0) != features.size(0))
    throw Error("linear probe: labels of shape " + c10::str(labels.sizes()) + " for " +
                std::to_string(features.size(0)) + " feature rows");
  if (classes < 1 || labels.min().item<int64_t>() < 0 || labels.max().item<int64_t>() >= classes)
    throw Error("linear probe: labels outside the " + std::to_string(classes) + " classes");
}

at::Tensor standardised(const LinearProbe& probe, const at::Tensor& features) {
  return (features.to(torch::kCPU, torch::kDouble) - probe.mean) / probe.std;
}

}  // namespace

std::vector<at::Tensor> pooled_layers(VisionTransformer& model, const ImageBatches& images) {
  std::vector<std::vector<at::Tensor>> batches;  // [layer][batch]
  images.for_each([&](int64_t, const at::Tensor& inputs) {
    const ResidualStream stream = residual_stream(model, inputs);
    batches.resize(stream.layers.size());
    for (size_t l = 0; l < stream.layers.size(); ++l)
      batches[l].push_back(model->pool(stream.layers[l]).to(torch::kCPU, torch::kFloat));
  });
  std::vector<at::Tensor> layers;
  for (const auto& b : batches)
    layers.push_back(torch::cat(b));  // (n, D)
  return layers;
}

// L-BFGS in float64, from zero weights.
LinearProbe fit_linear_probe(const at::Tensor& features, const at::Tensor& labels, int64_t classes,
                             double l2) {
  check_probe_inputs(features, labels, classes, l2);
  torch::AutoGradMode enable_grad(true);
  LinearProbe probe;
  const auto x64 = features.to(torch::kCPU, torch::kDouble);
  probe.mean = x64.mean(/*dim=*/0);
  const auto spread = (x64 - probe.mean).pow(2).mean(/*dim=*/0).sqrt();  // population std
  probe.std = torch::where(spread > 1e-12, spread, torch::ones_like(spread));
  const auto x = standardised(probe, x64);  // (n, D)
  const auto y = labels.to(torch::kCPU, torch::kLong);

  auto weight = torch::zeros({classes, x.size(1)}, torch::kDouble).requires_grad_(true);
  auto bias = torch::zeros({classes}, torch::kDouble).requires_grad_(true);
  torch::optim::LBFGS optimizer({weight, bias}, torch::optim::LBFGSOptions(1.0)
                                                    .max_iter(kMaxIterations)
                                                    .max_eval(kMaxIterations * 5 / 4)
                                                    .tolerance_grad(1e-9)
                                                    .tolerance_change(1e-12)
                                                    .history_size(20)
                                                    .line_search_fn("strong_wolfe"));
  const auto objective = [&] {
    optimizer.zero_grad();
    auto loss = torch::nn::functional::cross_entropy(torch::addmm(bias, x, weight.t()), y) +
                l2 * weight.pow(2).sum();
    loss.backward();
    return loss;
  };
  optimizer.step(objective);
  probe.weight = weight.detach();
  probe.bias = bias.detach();
  return probe;
}

at::Tensor probe_logits(const LinearProbe& probe, const at::Tensor& features) {
  return torch::addmm(probe.bias, standardised(probe, features), probe.weight.t());  // (n, K)
}

double top1_accuracy(const at::Tensor& logits, const at::Tensor& labels) {
  return logits.argmax(/*dim=*/1)
      .eq(labels.to(logits.device()))
      .to(torch::kDouble)
      .mean()
      .item<double>();
}

}  // namespace vit
