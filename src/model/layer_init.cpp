#include "layer_init.hpp"

#include <torch/torch.h>

namespace vit {
namespace {

thread_local WeightInit current = WeightInit::kRandom;

}  // namespace

LayerInitScope::LayerInitScope(WeightInit init) : outer_(current) {
  current = init;
}

LayerInitScope::~LayerInitScope() {
  current = outer_;
}

torch::nn::Linear make_linear(int64_t in, int64_t out, bool bias) {
  if (current == WeightInit::kRandom)
    return torch::nn::Linear(torch::nn::LinearOptions(in, out).bias(bias));
  // LibTorch's Linear draws its values in its constructor, with no way to
  // skip them: made 1 x 1 (one draw), then given its real size unfilled.
  torch::nn::Linear layer(torch::nn::LinearOptions(1, 1).bias(bias));
  layer->options.in_features(in).out_features(out);
  torch::NoGradGuard no_grad;
  layer->weight.set_data(torch::empty({out, in}));
  if (bias) layer->bias.set_data(torch::empty({out}));
  return layer;
}

}  // namespace vit
