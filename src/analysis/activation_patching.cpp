// Shape key: n pairs, L blocks, T tokens, H heads, Dh head width, D width, K classes.
#include "vit/analysis/activation_patching.hpp"

#include <cmath>
#include <limits>

#include <torch/torch.h>

#include "vit/analysis/residual_stream.hpp"
#include "vit/error.hpp"

namespace vit {
namespace {

constexpr const char* kWhere = "activation patching";
// Images of the patched batches' streams at a time: T copies of the pairs'
// stream are patched at once, in chunks of tokens that keep this bound.
constexpr int64_t kBatchBytes = int64_t{256} << 20;

// m = logit_c - logit_k, (n) double.
at::Tensor metric(const at::Tensor& logits, const at::Tensor& c, const at::Tensor& k) {
  return (logits.gather(1, c.unsqueeze(1)) - logits.gather(1, k.unsqueeze(1)))
      .squeeze(1)
      .to(torch::kCPU, torch::kDouble);
}

struct Pairs {
  at::Tensor c, k;                // int64 (n) on the model's device
  at::Tensor m_corrupt, span;     // (n) double: m at the corrupt run, m_clean - m_corrupt
  ResidualStream clean, corrupt;  // with the heads
};

// The normalised effect of each patched run: (n) -> its mean over the pairs.
double mean_effect(const at::Tensor& logits, const Pairs& p) {
  return ((metric(logits, p.c, p.k) - p.m_corrupt) / p.span).mean().item<double>();
}

void check_inputs(const at::Tensor& clean, const at::Tensor& corrupt, const at::Tensor& c,
                  const at::Tensor& k) {
  if (clean.dim() != 4 || clean.sizes() != corrupt.sizes())
    throw Error(std::string(kWhere) + ": clean images " + c10::str(clean.sizes()) +
                " and corrupt images " + c10::str(corrupt.sizes()) +
                ", expected two (n, C, S, S) of one shape");
  const int64_t n = clean.size(0);
  if (n < 1 || c.dim() != 1 || k.dim() != 1 || c.size(0) != n || k.size(0) != n)
    throw Error(std::string(kWhere) + ": " + std::to_string(n) + " pairs with labels " +
                c10::str(c.sizes()) + " and " + c10::str(k.sizes()) + ", expected one each");
  const auto same = c.eq(k).nonzero();
  if (same.size(0) > 0)
    throw Error(std::string(kWhere) + ": pair " + std::to_string(same[0][0].item<int64_t>()) +
                " has label " + std::to_string(c[same[0][0]].item<int64_t>()) +
                " for both images; expected two different classes");
}

Pairs prepare(VisionTransformer& model, const at::Tensor& clean, const at::Tensor& corrupt,
              const at::Tensor& clean_labels, const at::Tensor& corrupt_labels) {
  torch::NoGradGuard no_grad;
  Pairs p;
  p.c = clean_labels.to(clean.device(), torch::kLong);
  p.k = corrupt_labels.to(clean.device(), torch::kLong);
  p.clean = residual_stream(model, clean, /*with_heads=*/true);
  p.corrupt = residual_stream(model, corrupt, /*with_heads=*/true);
  const auto m_clean = metric(model->stream_logits(p.clean.layers.back()), p.c, p.k);
  p.m_corrupt = metric(model->stream_logits(p.corrupt.layers.back()), p.c, p.k);
  p.span = m_clean - p.m_corrupt;
  const auto flat = p.span.abs().lt(1e-6).nonzero();
  if (flat.size(0) > 0)
    throw Error(std::string(kWhere) + ": pair " + std::to_string(flat[0][0].item<int64_t>()) +
                " gives the same logit difference on both images; nothing to normalise by");
  return p;
}

// (L+1, T): each token of each layer patched alone. For one layer, a chunk of
// tokens goes as one batch of (chunk x n) streams.
at::Tensor residual_effects(VisionTransformer& model, const Pairs& p) {
  const auto& corrupt = p.corrupt.layers;
  const int64_t layers = static_cast<int64_t>(corrupt.size()), n = corrupt[0].size(0),
                tokens = corrupt[0].size(1), width = corrupt[0].size(2);
  const int64_t chunk =
      std::max<int64_t>(1, kBatchBytes / (n * tokens * width * int64_t{sizeof(float)}));
  auto effects = torch::zeros({layers, tokens}, torch::kDouble);
  for (int64_t l = 0; l < layers; ++l) {
    for (int64_t first = 0; first < tokens; first += chunk) {
      const int64_t count = std::min(chunk, tokens - first);
      auto batch = corrupt[l].repeat({count, 1, 1});  // (count*n, T, D): token-major
      for (int64_t i = 0; i < count; ++i)
        batch.narrow(0, i * n, n)
            .select(1, first + i)
            .copy_(p.clean.layers[l].select(1, first + i));
      const auto m =
          metric(logits_from_layer(model, batch, l), p.c.repeat({count}), p.k.repeat({count}))
              .view({count, n});
      effects[l].narrow(0, first, count).copy_(((m - p.m_corrupt) / p.span).mean(1));
    }
  }
  return effects;
}

// (L, H): each head of each block patched alone.
at::Tensor head_effects(VisionTransformer& model, const Pairs& p) {
  const auto& cfg = model->config();
  auto effects = torch::zeros({cfg.depth, cfg.heads}, torch::kDouble);
  for (int64_t l = 0; l < cfg.depth; ++l)
    for (int64_t h = 0; h < cfg.heads; ++h) {
      BlockAblation patch(l, h);
      patch.head_value = p.clean.heads[static_cast<size_t>(l)].narrow(2, h * cfg.head_dim(),
                                                                      cfg.head_dim());  // (n,N,Dh)
      effects[l][h] = mean_effect(logits_after(model, p.corrupt.layers[l], patch), p);
    }
  return effects;
}

// (clean - corrupt) . grad, summed over `dims`, per pair (n), normalised, mean.
at::Tensor attributed(const at::Tensor& clean, const at::Tensor& corrupt, const at::Tensor& grad,
                      const Pairs& p) {
  const auto products = ((clean - corrupt) * grad).to(torch::kCPU, torch::kDouble);  // (n, T, F)
  return products.div(p.span.view({-1, 1, 1})).mean(0);                              // (T, F)
}

void attribution_effects(VisionTransformer& model, const at::Tensor& corrupt_images, const Pairs& p,
                         PatchingResult& result) {
  const auto& cfg = model->config();
  torch::AutoGradMode grad_mode(true);
  const auto embedded = model->embed(corrupt_images).detach().requires_grad_(true);
  const ResidualStream run = stream_from(model, embedded, /*with_heads=*/true);
  // The metric's sum: each pair's gradient is its own (eval mode).
  const auto logits = model->stream_logits(run.layers.back());
  const auto total =
      (logits.gather(1, p.c.unsqueeze(1)) - logits.gather(1, p.k.unsqueeze(1))).sum();
  std::vector<at::Tensor> wrt(run.layers.begin(), run.layers.end());
  wrt.insert(wrt.end(), run.heads.begin(), run.heads.end());
  const auto grads = torch::autograd::grad({total}, wrt, /*grad_outputs=*/{},
                                           /*retain_graph=*/false, /*create_graph=*/false,
                                           /*allow_unused=*/true);
  const int64_t layers = static_cast<int64_t>(run.layers.size());
  torch::NoGradGuard no_grad;
  const auto grad_or_zero = [](const at::Tensor& g, const at::Tensor& like) {
    return g.defined() ? g : torch::zeros_like(like);
  };
  auto residual = torch::zeros({layers, run.layers[0].size(1)}, torch::kDouble);
  for (int64_t l = 0; l < layers; ++l) {
    const auto& corrupt = p.corrupt.layers[l];
    residual[l] = attributed(p.clean.layers[l], corrupt, grad_or_zero(grads[l], corrupt), p)
                      .sum(1);  // over the width: (T)
  }
  auto heads = torch::zeros({cfg.depth, cfg.heads}, torch::kDouble);
  for (int64_t l = 0; l < cfg.depth; ++l) {
    const auto& corrupt = p.corrupt.heads[static_cast<size_t>(l)];
    const auto per_feature = attributed(p.clean.heads[static_cast<size_t>(l)], corrupt,
                                        grad_or_zero(grads[layers + l], corrupt), p)
                                 .sum(0);  // over the tokens: (I)
    heads[l] = per_feature.view({cfg.heads, cfg.head_dim()}).sum(1);
  }
  result.attribution_residual = residual;
  result.attribution_heads = heads;
}

}  // namespace

PatchingResult activation_patching(VisionTransformer& model, const at::Tensor& clean,
                                   const at::Tensor& corrupt, const at::Tensor& clean_labels,
                                   const at::Tensor& corrupt_labels, PatchMethod method) {
  check_inputs(clean, corrupt, clean_labels, corrupt_labels);
  const auto clean_images = clean.to(torch::kFloat), corrupt_images = corrupt.to(torch::kFloat);
  const Pairs p = prepare(model, clean_images, corrupt_images, clean_labels, corrupt_labels);
  PatchingResult result;
  result.pairs = clean.size(0);
  if (method != PatchMethod::kAttribution) {
    result.residual = residual_effects(model, p);
    result.heads = head_effects(model, p);
  }
  if (method != PatchMethod::kActivation) attribution_effects(model, corrupt_images, p, result);
  return result;
}

double pearson_correlation(const at::Tensor& a, const at::Tensor& b) {
  const auto x = a.reshape({-1}).to(torch::kCPU, torch::kDouble);
  const auto y = b.reshape({-1}).to(torch::kCPU, torch::kDouble);
  if (x.numel() != y.numel() || x.numel() < 2)
    throw Error("correlation: " + std::to_string(x.numel()) + " and " + std::to_string(y.numel()) +
                " values, expected the same count, at least 2");
  const auto dx = x - x.mean(), dy = y - y.mean();
  const double norms = std::sqrt((dx * dx).sum().item<double>() * (dy * dy).sum().item<double>());
  if (norms == 0) return std::numeric_limits<double>::quiet_NaN();
  return (dx * dy).sum().item<double>() / norms;
}

}  // namespace vit
