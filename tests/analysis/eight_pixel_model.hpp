#pragma once
// The ViT the gradient-saliency tests share: 8x8 RGB images in 4x4 patches
// (a 2x2 grid), D = 12, 2 heads, 2 blocks, MLP 16, 3 classes.
#include <cstdint>

#include "../weights/small_model.hpp"

namespace vit::testing {

// With the weights torch::manual_seed(seed) gives, in eval mode.
inline VisionTransformer eight_pixel_model(uint64_t seed) {
  ModelConfig cfg;
  cfg.image_size = 8;
  cfg.patch_size = 4;
  cfg.num_classes = 3;
  cfg.dim = 12;
  cfg.heads = 2;
  cfg.mlp_dim = 16;
  cfg.depth = 2;
  return seeded_model(cfg, seed);
}

}  // namespace vit::testing
