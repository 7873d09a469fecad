#pragma once
// The small ViT the weight-format tests share: D = 32, 4 heads, 2 blocks,
// MLP 64, 16x16 RGB images in 4x4 patches (g = 4, N = 17 tokens), 5 classes.
#include <cstdint>

#include <torch/torch.h>

#include "vit/config.hpp"
#include "vit/model/vision_transformer.hpp"

namespace vit::testing {

inline Config small_config() {
  Config c;
  c.model.image_size = 16;
  c.model.patch_size = 4;
  c.model.num_classes = 5;
  c.model.dim = 32;
  c.model.depth = 2;
  c.model.heads = 4;
  c.model.mlp_dim = 64;
  return c;
}

// A model of `cfg` with the weights torch::manual_seed(seed) gives, in eval mode.
inline VisionTransformer seeded_model(const ModelConfig& cfg, uint64_t seed) {
  torch::manual_seed(seed);
  VisionTransformer model(cfg);
  model->eval();
  return model;
}

}  // namespace vit::testing
