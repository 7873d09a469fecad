#pragma once
// Low-precision copies of the model's weights, refreshed once per training step,
// which the model reads through model/weight_substitution. Under autocast they are
// the matrix products' weights, and training is the same to the bit as without the
// mirror. Without autocast (train.bf16_activations on CUDA, docs/gpu.md) they are
// every parameter and the model computes in bf16 end to end; the optimizer still
// updates fp32 master weights.
#include <utility>
#include <vector>

#include <ATen/core/Tensor.h>

#include "vit/config.hpp"
#include "vit/model/vision_transformer.hpp"
#include "vit/model/weight_substitution.hpp"
#include "vit/train/optimizer.hpp"

namespace vit {

// Whether a training step runs in bf16 end to end, with no autocast: under bf16 on
// CUDA, where train.bf16_activations asks for it. Elsewhere steps use autocast.
bool runs_bf16_end_to_end(Precision precision, c10::Device device, bool bf16_activations);

// Which parameters the mirror copies.
enum class MirrorScope {
  kMatrixProducts,  // the Linear and Conv2d weights and biases: under autocast
  kAllParameters,   // every parameter: no autocast, the model runs in `dtype`
};

class WeightMirror {
 public:
  // Mirrors, in `dtype`, the parameters in `scope` that `optimizer` trains;
  // kAllParameters also copies the frozen ones, without gradients.
  WeightMirror(VisionTransformer& model, Optimizer& optimizer, at::ScalarType dtype,
               MirrorScope scope = MirrorScope::kMatrixProducts);

  // Before an optimizer step's first forward pass: copies the fp32 values and
  // zeroes the copies' gradients.
  void refresh();
  // Before each further micro-batch, so collect_gradients adds each one once.
  void zero_gradients();
  // For a WeightSubstitution scope around the forward pass.
  const WeightMap& substitutes() const { return substitutes_; }
  // After the backward pass: adds the copies' gradients to the optimizer's.
  void collect_gradients();

 private:
  Optimizer& optimizer_;
  at::Tensor values_, gradients_;  // flat, in `dtype`, laid out as the optimizer's
  WeightMap substitutes_;
  std::vector<std::pair<at::Tensor, at::Tensor>> frozen_;  // (parameter, copy), kAllParameters
};

}  // namespace vit
