#pragma once
// Saliency: which input pixels or patches move one class's logit.
//   grad          max over channels of |d logit_c / d x|               (B, S, S)
//   grad-x-input  |sum over channels of x * d logit_c / d x|           (B, S, S)
//   grad-rollout  gradient-weighted attention rolled out over layers    (B, g, g)
//                 (Chefer, Gur & Wolf, 2021: "Generic Attention-model
//                 Explainability", eqs. 5-6):
//                   A_bar_l = mean over heads of (dlogit_c/dA_l * A_l)^+
//                   R_0 = I,   R_l = R_{l-1} + A_bar_l R_{l-1}
//                 A_bar multiplies from the left, as in the paper (vit-explain's
//                 gradient rollout multiplies the other way, its issue #6).
//                 The map is read from R_L - I: what attention added to each
//                 token. For the class token's row that is R's own row (its
//                 patch columns hold no identity); for the mean of the patch
//                 rows, the identity would add the same 1/g^2 to every patch
//                 and drown the signal on a mean-pooled model.
//   integrated-gradients  sum over channels of the integrated gradients     (B, S, S)
//                 (analysis/integrated_gradients), with their sign
//   smoothgrad    the grad map averaged over noisy copies of x               (B, S, S)
// x is the normalised input the model sees; c the explained class. Maps are
// raw: neither rescaled nor clipped beyond what the formulas say.
//
// Shape key: L layers, B batch, C channels, S image side, H heads,
//            N = F + g*g tokens (the class token and the registers first), K classes.
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

#include "vit/analysis/rollout.hpp"
#include "vit/enum_names.hpp"
#include "vit/model/vision_transformer.hpp"

namespace vit {

enum class SaliencyMethod { kGrad, kGradXInput, kGradRollout, kIntegratedGradients, kSmoothGrad };
template <>
struct EnumNames<SaliencyMethod> {
  static constexpr std::pair<SaliencyMethod, const char*> table[] = {
      {SaliencyMethod::kGrad, "grad"},
      {SaliencyMethod::kGradXInput, "grad-x-input"},
      {SaliencyMethod::kGradRollout, "grad-rollout"},
      {SaliencyMethod::kIntegratedGradients, "integrated-gradients"},
      {SaliencyMethod::kSmoothGrad, "smoothgrad"}};
};

// The settings of the methods that average gradients over many inputs.
struct GradientAveraging {
  int64_t steps = 32;    // integrated gradients: Gauss-Legendre points on [0, 1]
  at::Tensor baseline;   // integrated gradients, normalised; undefined: 0, the data's mean image
  double noise = 0.15;   // smoothgrad: the noise's sd as a fraction of each image's max - min
  int64_t samples = 25;  // smoothgrad: noisy copies per image
  uint64_t seed = 0;     // smoothgrad's noise
};

// The grad-rollout map from the attention (B,H,N,N) of every layer and the
// gradient of the explained logit with respect to it (same shapes): the class
// token's row of R - I (kClassToken) or the mean of its patch rows (kPatchMean),
// patch columns only -> (B, g, g), float64 for float64 input, else float32.
// Throws vit::Error for shapes check_attention_shapes rejects or gradients that
// do not match the attention.
at::Tensor gradient_rollout(const std::vector<at::Tensor>& attentions,
                            const std::vector<at::Tensor>& gradients,
                            RolloutSource source = RolloutSource::kClassToken,
                            int64_t prefix_tokens = 1);

struct Saliency {
  at::Tensor maps;                // float (B, S, S), or (B, g, g) for grad-rollout
  at::Tensor logits;              // float (B, K), detached
  at::Tensor classes;             // int64 (B): the explained class of each image
  at::Tensor completeness_error;  // float64 (B), integrated gradients only
};

// Runs `model` (in eval mode, so images do not interact) on `inputs` float
// (B, C, S, S), normalised, and differentiates the chosen logit of each image:
// classes[b] for a defined int64 (B) `classes`, else the predicted class. The
// gradients come from torch::autograd::grad on the input and on the attention
// tensors forward_with_attention returns (no hooks); the parameters' .grad
// stays untouched. grad-rollout reads the map from `source`'s rows;
// integrated-gradients and smoothgrad take `averaging`. Throws vit::Error for
// a class outside [0, K).
Saliency compute_saliency(VisionTransformer& model, const at::Tensor& inputs, SaliencyMethod method,
                          const at::Tensor& classes = {},
                          RolloutSource source = RolloutSource::kClassToken,
                          const GradientAveraging& averaging = {});

}  // namespace vit
