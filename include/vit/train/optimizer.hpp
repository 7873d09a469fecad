#pragma once
// The optimizer, with weight decay on weight matrices only: biases, norms, the
// class token and the position embedding are not decayed.
#include <memory>

#include <torch/optim/optimizer.h>

#include "vit/config.hpp"
#include "vit/model/vision_transformer.hpp"

namespace vit {

// True for parameters that get weight decay.
bool decays(const std::string& name, const torch::Tensor& parameter);

std::unique_ptr<torch::optim::Optimizer> make_optimizer(VisionTransformer& model,
                                                        const TrainConfig& train);

void set_learning_rate(torch::optim::Optimizer& optimizer, double lr);

}  // namespace vit
