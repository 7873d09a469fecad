#pragma once
// The ViT the gradient-saliency tests share: 8x8 RGB images in 4x4 patches
// (a 2x2 grid), D = 12, 2 heads, 2 blocks, MLP 16, 3 classes.
#include <cstdint>

#include <torch/torch.h>

#include "vit/model/vision_transformer.hpp"

namespace vit::testing {

// With the weights torch::manual_seed(seed) gives, in eval mode.
inline VisionTransformer eight_pixel_model(uint64_t seed) {
  torch::manual_seed(seed);
  ModelConfig cfg;
  cfg.image_size = 8;
  cfg.patch_size = 4;
  cfg.channels = 3;
  cfg.num_classes = 3;
  cfg.dim = 12;
  cfg.depth = 2;
  cfg.heads = 2;
  cfg.mlp_dim = 16;
  VisionTransformer model(cfg);
  model->eval();
  return model;
}

}  // namespace vit::testing
