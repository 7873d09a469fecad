// Under bf16 (or fp16) autocast every Linear and the patch convolution cast their
// fp32 weight and bias in the forward pass, and autograd casts each of their
// gradients back to fp32 in the backward pass: some four operators each way for
// each of the demo model's 52 such tensors, a tenth of the operators of a step.
// The mirror holds one low-precision copy of the optimizer's whole flat parameter
// vector instead, refreshed by one copy per step; the model's matrix products read
// their slices (model/weight_substitution), and their gradients accumulate in one
// low-precision flat vector, which one addition moves into the optimizer's fp32
// gradients.
//
// The result is the same to the bit: autocast rounds each weight to the same
// low-precision value, and its products return their gradients in low precision
// too, which it then widens to fp32 exactly as the addition does. LayerNorm's
// parameters and the embeddings, which autocast leaves in fp32, are not
// substituted, and their gradients reach the fp32 vector as before.
//
// Without autocast (kAllParameters) the mirror holds every parameter, LayerNorm's
// and the embeddings' too (frozen ones as copies without gradients): the residual
// stream, LayerNorm's input and output and their gradients are bf16, with no casts
// between the layers.
#include "vit/train/weight_mirror.hpp"

#include <torch/torch.h>

namespace vit {

bool runs_bf16_end_to_end(Precision precision, c10::Device device, bool bf16_activations) {
  return bf16_activations && precision == Precision::kBf16 && device.is_cuda();
}

WeightMirror::WeightMirror(VisionTransformer& model, Optimizer& optimizer, at::ScalarType dtype,
                           MirrorScope scope)
    : optimizer_(optimizer) {
  const auto& flat = optimizer.values();
  values_ = torch::empty_like(flat, flat.options().dtype(dtype));
  gradients_ = torch::zeros_like(values_);
  torch::NoGradGuard no_grad;
  auto mirror = [&](const at::Tensor& parameter) {
    if (!parameter.defined() || !parameter.requires_grad()) return;
    const int64_t offset = optimizer.offset_of(parameter);
    if (offset < 0) return;
    const int64_t n = parameter.numel();
    // A leaf whose data is the slice, as the optimizer makes its parameters,
    // so that autograd accumulates its gradient into gradients_ in place.
    auto copy = torch::empty({0}, values_.options()).requires_grad_(true);
    copy.set_data(values_.narrow(0, offset, n).view(parameter.sizes()));
    copy.mutable_grad() = gradients_.narrow(0, offset, n).view(parameter.sizes());
    substitutes_.emplace(parameter.unsafeGetTensorImpl(), copy);
  };
  if (scope == MirrorScope::kAllParameters) {
    for (const auto& parameter : model->parameters()) {
      mirror(parameter);
      // A frozen parameter (train.freeze) gets a copy too, without a
      // gradient: with no autocast, an fp32 weight could not meet bf16
      // activations.
      if (substitutes_.count(parameter.unsafeGetTensorImpl()) == 0) {
        auto copy = parameter.detach().to(dtype);
        frozen_.emplace_back(parameter, copy);
        substitutes_.emplace(parameter.unsafeGetTensorImpl(), copy);
      }
    }
    return;
  }
  for (const auto& module : model->modules(/*include_self=*/false)) {
    if (auto* linear = module->as<torch::nn::Linear>()) {
      mirror(linear->weight);
      mirror(linear->bias);
    } else if (auto* conv = module->as<torch::nn::Conv2d>()) {
      mirror(conv->weight);
      mirror(conv->bias);
    }
  }
}

void WeightMirror::refresh() {
  torch::NoGradGuard no_grad;
  values_.copy_(optimizer_.values());
  gradients_.zero_();
  for (auto& [parameter, copy] : frozen_)  // a resumed checkpoint may have loaded them
    copy.copy_(parameter);
}

void WeightMirror::zero_gradients() {
  torch::NoGradGuard no_grad;
  gradients_.zero_();
}

void WeightMirror::collect_gradients() {
  torch::NoGradGuard no_grad;
  optimizer_.gradients().add_(gradients_);
}

}  // namespace vit
