#pragma once
// Which parameters train, and how: each group has its own learning-rate scale
// and weight decay. The optimizer lays the groups out one after the other in
// its flat buffers, in this order.
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

#include "vit/config.hpp"
#include "vit/model/vision_transformer.hpp"

namespace vit {

struct ParameterGroup {
  std::string name;                    // "decay", "no_decay"; shown in logs and errors
  std::vector<std::string> names;      // timm's parameter names, one per tensor
  std::vector<at::Tensor> parameters;  // the model's own tensors
  double lr_scale = 1.0;               // multiplies the scheduled learning rate
  double weight_decay = 0.0;
};

// True for parameters that get weight decay: weight matrices and kernels, but
// not biases, norms, the class token or the position embedding.
bool decays(const std::string& name, const at::Tensor& parameter);

// The trainable parameters (requires_grad) of `model`, in groups: weights with
// train.weight_decay first, then everything else without decay, each split by
// learning-rate scale (train.layer_decay, train.head_lr_scale; fine_tune.hpp)
// in the order the scales first appear. With both knobs at 1 that is two
// groups, "decay" and "no_decay". Each keeps the model's parameter order.
// Empty groups are left out.
std::vector<ParameterGroup> parameter_groups(VisionTransformer& model, const TrainConfig& train);

}  // namespace vit
