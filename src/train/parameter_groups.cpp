#include "vit/train/parameter_groups.hpp"

#include <algorithm>
#include <cstdio>

#include <torch/torch.h>

#include "vit/train/fine_tune.hpp"

namespace vit {
namespace {

// "decay" or "no_decay", with the lr scale when it is not 1: "decay, lr x0.4219".
std::string group_name(bool decayed, double lr_scale) {
  const std::string base = decayed ? "decay" : "no_decay";
  if (lr_scale == 1.0) return base;
  char scale[32];
  std::snprintf(scale, sizeof scale, "%.4g", lr_scale);
  return base + ", lr x" + scale;
}

}  // namespace

bool decays(const std::string& name, const at::Tensor& parameter) {
  // The prefix tokens and the positions are embeddings, not weights (timm's
  // no_weight_decay); LayerScale's gammas, norms and biases are 1-D.
  return parameter.dim() >= 2 && name != "cls_token" && name != "reg_token" &&
         name != "dist_token" && name != "pos_embed";
}

std::vector<ParameterGroup> parameter_groups(VisionTransformer& model, const TrainConfig& train) {
  const int64_t depth = model->config().depth;
  std::vector<ParameterGroup> decayed, plain;  // one group per lr scale, in order of appearance
  for (const auto& p : model->named_parameters()) {
    if (!p.value().requires_grad()) continue;
    const bool decay = decays(p.key(), p.value());
    const double scale = lr_scale(p.key(), depth, train);
    auto& groups = decay ? decayed : plain;
    auto group = std::find_if(groups.begin(), groups.end(),
                              [&](const ParameterGroup& g) { return g.lr_scale == scale; });
    if (group == groups.end()) {
      groups.push_back({group_name(decay, scale), {}, {}, scale, decay ? train.weight_decay : 0.0});
      group = std::prev(groups.end());
    }
    group->names.push_back(p.key());
    group->parameters.push_back(p.value());
  }
  decayed.insert(decayed.end(), std::make_move_iterator(plain.begin()),
                 std::make_move_iterator(plain.end()));
  return decayed;
}

}  // namespace vit
