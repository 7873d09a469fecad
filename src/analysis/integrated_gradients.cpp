// Shape key: B batch, C channels, S image side, K classes.
#include "vit/analysis/integrated_gradients.hpp"

#include <cmath>

#include <ATen/CPUGeneratorImpl.h>
#include <fmt/format.h>
#include <torch/torch.h>

#include "vit/error.hpp"

namespace vit {
namespace {

// d logit_classes / d x for each image of x (B, C, S, S). In eval mode no
// image affects another, so one backward of the sum gives each its own.
at::Tensor logit_gradient(VisionTransformer& model, const at::Tensor& x,
                          const at::Tensor& classes) {
  torch::AutoGradMode enable_grad(true);
  const auto leaf = x.detach().requires_grad_(true);
  const auto chosen = model->forward(leaf).gather(/*dim=*/1, classes.unsqueeze(1)).sum();
  return torch::autograd::grad({chosen}, {leaf})[0];  // (B, C, S, S)
}

at::Tensor chosen_logits(VisionTransformer& model, const at::Tensor& x, const at::Tensor& classes) {
  torch::NoGradGuard no_grad;
  return model->forward(x).gather(/*dim=*/1, classes.unsqueeze(1)).squeeze(1);  // (B)
}

}  // namespace

// The roots of the Legendre polynomial P_n by Newton's method from
// Tricomi's estimates, two at a time by symmetry, and the weights
// 2 / ((1 - z^2) P_n'(z)^2); then moved from [-1, 1] to [0, 1], as Captum's
// "gausslegendre" moves numpy's leggauss.
QuadratureRule gauss_legendre(int64_t n) {
  if (n < 1) throw Error(fmt::format("Gauss-Legendre rule of {} points, expected at least 1", n));
  QuadratureRule rule{std::vector<double>(n), std::vector<double>(n)};
  for (int64_t i = 0; i < (n + 1) / 2; ++i) {
    double z = std::cos(M_PI * (double(i) + 0.75) / (double(n) + 0.5)), derivative = 0;
    for (int iteration = 0; iteration < 100; ++iteration) {
      double p = 1, previous = 0;  // P_j(z), P_{j-1}(z)
      for (int64_t j = 1; j <= n; ++j) {
        const double before = previous;
        previous = p;
        p = ((2.0 * double(j) - 1.0) * z * previous - (double(j) - 1.0) * before) / double(j);
      }
      derivative = double(n) * (z * p - previous) / (z * z - 1.0);
      const double step = p / derivative;
      z -= step;
      if (std::abs(step) < 1e-15) break;
    }
    const double weight = 2.0 / ((1.0 - z * z) * derivative * derivative);
    rule.points[i] = 0.5 * (1.0 - z);  // -z, ascending
    rule.points[n - 1 - i] = 0.5 * (1.0 + z);
    rule.weights[i] = rule.weights[n - 1 - i] = 0.5 * weight;
  }
  return rule;
}

Attributions integrated_gradients(VisionTransformer& model, const at::Tensor& inputs,
                                  const at::Tensor& classes, const at::Tensor& baseline,
                                  int64_t steps) {
  if (steps < 1)
    throw Error(fmt::format("integrated gradients: --steps {}, expected at least 1", steps));
  const auto x = inputs.detach().to(torch::kFloat);  // (B, C, S, S)
  const auto b = baseline.defined() ? baseline.detach().to(x.device(), torch::kFloat).expand_as(x)
                                    : torch::zeros_like(x);
  const auto delta = x - b;
  const QuadratureRule rule = gauss_legendre(steps);
  auto integral = torch::zeros_like(x);
  for (int64_t i = 0; i < steps; ++i)
    integral.add_(logit_gradient(model, b + rule.points[i] * delta, classes), rule.weights[i]);
  Attributions out;
  out.values = delta * integral;  // (B, C, S, S)
  const auto change =
      (chosen_logits(model, x, classes) - chosen_logits(model, b.contiguous(), classes))
          .to(torch::kDouble);  // (B)
  out.completeness_error =
      (out.values.sum(/*dim=*/{1, 2, 3}).to(torch::kDouble) - change) / change.abs();
  return out;
}

at::Tensor smoothgrad(VisionTransformer& model, const at::Tensor& inputs, const at::Tensor& classes,
                      double noise, int64_t samples, uint64_t seed) {
  if (samples < 1)
    throw Error(fmt::format("smoothgrad: --samples-per-image {}, expected at least 1", samples));
  if (!std::isfinite(noise) || noise < 0)
    throw Error(fmt::format("smoothgrad: --noise {}, expected a fraction of the input's range >= 0",
                            noise));
  const auto x = inputs.detach().to(torch::kFloat);  // (B, C, S, S)
  const auto flat = x.flatten(/*start_dim=*/1);
  const auto sigma = (noise * (flat.amax(/*dim=*/1) - flat.amin(/*dim=*/1))).view({-1, 1, 1, 1});
  // Drawn on the CPU, so a seed gives the same noise on every device.
  auto generator = at::detail::createCPUGenerator(seed);
  auto total = torch::zeros({x.size(0), x.size(2), x.size(3)}, x.options());
  for (int64_t s = 0; s < samples; ++s) {
    const auto draw = at::randn(x.sizes(), generator, torch::kFloat).to(x.device());
    total += logit_gradient(model, x + sigma * draw, classes).abs().amax(/*dim=*/1);
  }
  return total / double(samples);  // (B, S, S)
}

}  // namespace vit
