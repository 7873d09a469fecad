#pragma once
// Saliency: which input pixels or patches move one class's logit. x is the
// normalised input the model sees, c the explained class; maps are raw.
//   grad          max over channels of |d logit_c / d x|               (B, S, S)
//   grad-x-input  |sum over channels of x * d logit_c / d x|           (B, S, S)
//   grad-rollout  gradient-weighted attention rolled out over layers    (B, g, g)
//                 (Chefer, Gur & Wolf, 2021, eqs. 5-6), read from R_L - I:
//                   A_bar_l = mean over heads of (dlogit_c/dA_l * A_l)^+
//                   R_0 = I,   R_l = R_{l-1} + A_bar_l R_{l-1}
//   integrated-gradients  integrated gradients summed over channels, signed (B, S, S)
//   smoothgrad    the grad map averaged over noisy copies of x               (B, S, S)
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

// The grad-rollout map from every layer's attention (B,H,N,N) and the explained
// logit's gradient with respect to it (same shapes): the rows of R - I that
// `source` weighs (rollout_source_weights), patch columns only -> (B, g, g), float64
// for float64 input, else float32. Throws vit::Error for bad shapes (check_attention_shapes).
at::Tensor gradient_rollout(const std::vector<at::Tensor>& attentions,
                            const std::vector<at::Tensor>& gradients,
                            RolloutSource source = RolloutSource::kClassToken,
                            int64_t prefix_tokens = 1, const at::Tensor& pool_attention = {});

struct Saliency {
  at::Tensor maps;                // float (B, S, S), or (B, g, g) for grad-rollout
  at::Tensor logits;              // float (B, K), detached
  at::Tensor classes;             // int64 (B): the explained class of each image
  at::Tensor completeness_error;  // float64 (B), integrated gradients only
};

// Runs `model` in eval mode on normalised float `inputs` (B, C, S, S) and
// differentiates each image's logit for classes[b] (int64 (B)), or by default the
// predicted class. `source` serves grad-rollout, `averaging` integrated-gradients and
// smoothgrad. The parameters' .grad stays untouched. Throws vit::Error for a class
// outside [0, K).
Saliency compute_saliency(VisionTransformer& model, const at::Tensor& inputs, SaliencyMethod method,
                          const at::Tensor& classes = {},
                          RolloutSource source = RolloutSource::kClassToken,
                          const GradientAveraging& averaging = {});

}  // namespace vit
