#include "vit/train/parameter_groups.hpp"

#include <torch/torch.h>

namespace vit {

bool decays(const std::string& name, const at::Tensor& parameter) {
  return parameter.dim() >= 2 && name != "cls_token" && name != "pos_embed";
}

std::vector<ParameterGroup> parameter_groups(VisionTransformer& model, const TrainConfig& train) {
  ParameterGroup decayed{"decay", {}, {}, 1.0, train.weight_decay};
  ParameterGroup plain{"no_decay", {}, {}, 1.0, 0.0};
  for (const auto& p : model->named_parameters()) {
    if (!p.value().requires_grad()) continue;
    auto& group = decays(p.key(), p.value()) ? decayed : plain;
    group.names.push_back(p.key());
    group.parameters.push_back(p.value());
  }
  std::vector<ParameterGroup> groups;
  for (auto* group : {&decayed, &plain})
    if (!group->parameters.empty()) groups.push_back(std::move(*group));
  return groups;
}

}  // namespace vit
