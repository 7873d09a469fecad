#pragma once
// The saliency methods that average gradients over many inputs near the image:
//   integrated gradients  (Sundararajan, Taly & Yan, 2017): (x - b) * integral over
//                         a in [0, 1] of d logit_c / d x at b + a (x - b), by
//                         Gauss-Legendre quadrature, as Captum's default
//   smoothgrad            (Smilkov et al., 2017): the grad map, max over channels of
//                         |d logit_c / d x|, averaged over copies x + N(0, sigma^2)
// Shape key: B batch, C channels, S image side.
#include <vector>

#include <ATen/core/Tensor.h>

#include "vit/model/vision_transformer.hpp"

namespace vit {

// The n-point Gauss-Legendre rule on [0, 1]: points ascending, weights summing to 1,
// exact for polynomials of degree up to 2n - 1 (Captum's "gausslegendre").
struct QuadratureRule {
  std::vector<double> points, weights;
};
QuadratureRule gauss_legendre(int64_t n);

struct Attributions {
  at::Tensor values;              // float (B, C, S, S), with their sign
  at::Tensor completeness_error;  // float64 (B): (sum(values) - (f(x) - f(b))) / |f(x) - f(b)|
};

// Integrated gradients of logit classes[b] of each normalised image of float
// `inputs` (B, C, S, S), from the normalised `baseline` (broadcast), with `steps`
// points, the model in eval mode. Throws vit::Error for steps < 1.
Attributions integrated_gradients(VisionTransformer& model, const at::Tensor& inputs,
                                  const at::Tensor& classes, const at::Tensor& baseline,
                                  int64_t steps);

// SmoothGrad of logit classes[b]: float (B, S, S). The noise's sd is `noise` times each image's
// (max - min); `samples` copies per image, drawn from `seed`. Throws vit::Error for
// samples < 1 or a noise that is negative or not finite.
at::Tensor smoothgrad(VisionTransformer& model, const at::Tensor& inputs, const at::Tensor& classes,
                      double noise, int64_t samples, uint64_t seed);

}  // namespace vit
