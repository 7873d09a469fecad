#pragma once
// Low-precision copies of the weights of the model's matrix products, made
// once per training step.
//
// Under bf16 (or fp16) autocast every Linear and the patch convolution cast
// their fp32 weight and bias in the forward pass, and autograd casts each of
// their gradients back to fp32 in the backward pass: some four operators
// each way for each of the demo model's 52 such tensors, a tenth of the
// operators of a step. The mirror holds one low-precision copy of the
// optimizer's whole flat parameter vector instead, refreshed by one copy per
// step; the model's matrix products read their slices (model/
// weight_substitution), and their gradients accumulate in one low-precision
// flat vector, which one addition moves into the optimizer's fp32 gradients.
//
// The result is the same to the bit: autocast rounds each weight to the same
// low-precision value, and its products return their gradients in low
// precision too, which it then widens to fp32 exactly as the addition does.
// LayerNorm's parameters and the embeddings, which autocast leaves in fp32,
// are not substituted, and their gradients reach the fp32 vector as before.
//
// Without autocast (train.bf16_activations on CUDA) the mirror holds every
// parameter instead, LayerNorm's and the embeddings' too (frozen ones as
// copies without gradients), and the model computes in bf16 from end to end:
// the residual stream, LayerNorm's input and output and their gradients are
// bf16, with no casts between the layers. The optimizer still updates fp32
// master weights.
#include <utility>
#include <vector>

#include <ATen/core/Tensor.h>

#include "vit/config.hpp"
#include "vit/model/vision_transformer.hpp"
#include "vit/model/weight_substitution.hpp"
#include "vit/train/optimizer.hpp"

namespace vit {

// Whether a training step runs in bf16 from end to end, with no autocast
// (train.bf16_activations, with the mirror below): under bf16 on CUDA,
// where it is asked for. Everywhere else the step runs under autocast.
bool runs_bf16_end_to_end(Precision precision, c10::Device device, bool bf16_activations);

// Which parameters the mirror copies.
enum class MirrorScope {
  kMatrixProducts,  // the Linear and Conv2d weights and biases: under autocast
  kAllParameters,   // every parameter: no autocast, the model runs in `dtype`
};

class WeightMirror {
 public:
  // Mirrors, in `dtype`, the parameters in `scope` of `model` that
  // `optimizer` trains (its flat vector holds them). kAllParameters also
  // copies the frozen ones, without gradients.
  WeightMirror(VisionTransformer& model, Optimizer& optimizer, at::ScalarType dtype,
               MirrorScope scope = MirrorScope::kMatrixProducts);

  // Before an optimizer step's first forward pass: the copies take the
  // current fp32 values, and their gradients are zeroed.
  void refresh();
  // Before each further micro-batch (train.accum_steps): the copies'
  // gradients are zeroed, so that collect_gradients adds each one once.
  void zero_gradients();
  // The substitutes for a WeightSubstitution scope around the forward pass.
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
