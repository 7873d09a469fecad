#pragma once
// Private to the model layer: whether the layers being made get random values.
#include <cstdint>

#include <torch/nn/modules/linear.h>

#include "vit/model/vision_transformer.hpp"

namespace vit {

// Sets the init of the layers made on this thread while it lives.
class LayerInitScope {
 public:
  explicit LayerInitScope(WeightInit init);
  ~LayerInitScope();
  LayerInitScope(const LayerInitScope&) = delete;
  LayerInitScope& operator=(const LayerInitScope&) = delete;

 private:
  WeightInit outer_;
};

// A linear layer: LibTorch's, with its random values, or under kFromFile with
// its weight and bias only allocated.
torch::nn::Linear make_linear(int64_t in, int64_t out, bool bias = true);

}  // namespace vit
