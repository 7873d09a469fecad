// Shape key: L layers, B batch, C channels, S image side, H heads,
// N = 1 + g*g tokens, K classes.
#include "vit/analysis/saliency.hpp"

#include <torch/torch.h>

#include "vit/analysis/integrated_gradients.hpp"
#include "vit/error.hpp"

namespace vit {
namespace {

constexpr const char* kSaliencyWhere = "gradient rollout";

void check_gradients(const std::vector<at::Tensor>& attentions,
                     const std::vector<at::Tensor>& gradients, int64_t prefix_tokens) {
  check_attention_shapes(attentions, kSaliencyWhere, prefix_tokens);
  if (gradients.size() != attentions.size()) {
    throw Error(std::string(kSaliencyWhere) + ": " + std::to_string(gradients.size()) +
                " gradient tensors for " + std::to_string(attentions.size()) +
                " attention layers; expected one per layer");
  }
  for (size_t l = 0; l < gradients.size(); ++l) {
    if (!gradients[l].defined() || gradients[l].sizes() != attentions[l].sizes()) {
      throw Error(std::string(kSaliencyWhere) + ": gradients[" + std::to_string(l) + "] is " +
                  (gradients[l].defined() ? c10::str(gradients[l].sizes()) : "undefined") +
                  "; expected the attention's shape " + c10::str(attentions[l].sizes()));
    }
  }
}

// A_bar = mean over heads of (grad * A)^+ : (B,H,N,N) -> (B,N,N).
at::Tensor weighted_attention(const at::Tensor& attention, const at::Tensor& gradient,
                              torch::ScalarType dtype) {
  return (gradient.to(dtype) * attention.to(dtype)).clamp_min(0).mean(/*dim=*/1);
}

void check_classes(const at::Tensor& classes, int64_t batch, int64_t num_classes) {
  if (classes.dim() != 1 || classes.size(0) != batch) {
    throw Error("saliency: classes has shape " + c10::str(classes.sizes()) + "; expected (" +
                std::to_string(batch) + "), one class per image");
  }
  const auto low = classes.min().item<int64_t>(), high = classes.max().item<int64_t>();
  if (low < 0 || high >= num_classes) {
    throw Error("saliency: class " + std::to_string(low < 0 ? low : high) +
                " is outside the model's classes 0.." + std::to_string(num_classes - 1));
  }
}

// grad, grad-x-input: (B, C, S, S) -> (B, S, S).
at::Tensor pixel_map(SaliencyMethod method, const at::Tensor& x, const at::Tensor& gradient) {
  if (method == SaliencyMethod::kGrad) return gradient.abs().amax(/*dim=*/1);
  return (x.detach() * gradient).sum(/*dim=*/1).abs();
}

}  // namespace

// A_bar multiplies from the left, as in the paper (vit-explain's gradient rollout
// multiplies the other way, its issue #6). The map is read from R_L - I: what
// attention added to each token. For the class token's row that is R's own row
// (its patch columns hold no identity); for the mean of the patch rows, the identity
// would add the same 1/g^2 to every patch and drown the signal on a mean-pooled model.
at::Tensor gradient_rollout(const std::vector<at::Tensor>& attentions,
                            const std::vector<at::Tensor>& gradients, RolloutSource source,
                            int64_t prefix_tokens, const at::Tensor& pool_attention) {
  check_gradients(attentions, gradients, prefix_tokens);
  const auto shape = check_attention_shapes(attentions, kSaliencyWhere, prefix_tokens);
  const auto dtype =
      attentions.front().scalar_type() == torch::kDouble ? torch::kDouble : torch::kFloat;
  const auto weights = rollout_source_weights(
      source, shape, torch::dtype(dtype).device(attentions.front().device()), pool_attention);
  // w^T R with R = (I + A_bar_L) ... (I + A_bar_1): from the left, one row at a
  // time, O(N^2) per layer instead of the full O(N^3) product.
  auto rows = weights.clone();  // (B, 1, N)
  for (auto l = shape.layers - 1; l >= 0; --l) {
    rows = rows + torch::bmm(rows, weighted_attention(attentions[l], gradients[l], dtype));
  }
  rows = rows - weights;  // w^T (R - I): only what attention added
  return rows.squeeze(1)
      .slice(/*dim=*/1, /*start=*/shape.prefix)
      .reshape({shape.batch, shape.grid, shape.grid});  // (B, g, g)
}

namespace {

// integrated-gradients and smoothgrad: many passes of model->forward, at
// inputs near x, for the classes chosen at x.
Saliency averaged_saliency(VisionTransformer& model, const at::Tensor& inputs,
                           SaliencyMethod method, const at::Tensor& classes,
                           const GradientAveraging& averaging) {
  const auto x = inputs.detach().to(torch::kFloat);  // (B, C, S, S)
  Saliency result;
  {
    torch::NoGradGuard no_grad;
    result.logits = model->forward(x);  // (B, K)
  }
  result.classes = classes.defined() ? classes.to(x.device(), torch::kLong)
                                     : result.logits.argmax(/*dim=*/1);  // (B)
  check_classes(result.classes, x.size(0), result.logits.size(1));
  if (method == SaliencyMethod::kSmoothGrad) {
    result.maps =
        smoothgrad(model, x, result.classes, averaging.noise, averaging.samples, averaging.seed);
    return result;
  }
  Attributions attributions =
      integrated_gradients(model, x, result.classes, averaging.baseline, averaging.steps);
  result.maps = attributions.values.sum(/*dim=*/1);  // (B, S, S), with its sign
  result.completeness_error = attributions.completeness_error;
  return result;
}

}  // namespace

// Eval mode, so images do not interact. The gradients come from torch::autograd::grad
// on the input and on the attention tensors forward_with_attention returns (no hooks).
Saliency compute_saliency(VisionTransformer& model, const at::Tensor& inputs, SaliencyMethod method,
                          const at::Tensor& classes, RolloutSource source,
                          const GradientAveraging& averaging) {
  if (method == SaliencyMethod::kIntegratedGradients || method == SaliencyMethod::kSmoothGrad)
    return averaged_saliency(model, inputs, method, classes, averaging);
  torch::AutoGradMode enable_grad(true);
  const auto x = inputs.detach().to(torch::kFloat).requires_grad_(true);  // (B, C, S, S)
  const LogitsAndAttention out = model->forward_with_attention(x);
  Saliency result;
  result.logits = out.logits.detach();  // (B, K)
  result.classes = classes.defined() ? classes.to(x.device(), torch::kLong)
                                     : result.logits.argmax(/*dim=*/1);  // (B)
  check_classes(result.classes, x.size(0), result.logits.size(1));
  // In eval mode no image affects another, so one backward of the sum gives
  // every image its own gradient.
  const auto chosen = out.logits.gather(/*dim=*/1, result.classes.unsqueeze(1)).sum();
  std::vector<at::Tensor> wrt = {x};
  if (method == SaliencyMethod::kGradRollout)
    wrt.insert(wrt.end(), out.attention.begin(), out.attention.end());
  const auto grads = torch::autograd::grad({chosen}, wrt);
  if (method == SaliencyMethod::kGradRollout) {
    std::vector<at::Tensor> detached;
    for (const auto& a : out.attention)
      detached.push_back(a.detach());
    result.maps =
        gradient_rollout(detached, std::vector<at::Tensor>(grads.begin() + 1, grads.end()), source,
                         model->config().prefix_tokens(),
                         out.pool_attention.defined() ? out.pool_attention.detach() : at::Tensor());
  } else {
    result.maps = pixel_map(method, x, grads[0]);
  }
  return result;
}

}  // namespace vit
