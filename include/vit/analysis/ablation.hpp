#pragma once
// What each part of a trained ViT is worth: the loss and accuracy when one
// attention head, or a block's whole attention or MLP branch, is removed
// (Michel, Levy & Neubig, 2019, "Are Sixteen Heads Really Better than One?").
//
// A head is removed from the merged heads, before the output projection: its
// Dh columns become zeros (kZero) or their mean over the images of the intact
// model, per token position (kMean). A skipped branch keeps its residual.
//
// Shape key: L layers, H heads, n images, N tokens, Dh head width, K classes.
#include <cstdint>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

#include "vit/analysis/image_batches.hpp"
#include "vit/enum_names.hpp"
#include "vit/model/vision_transformer.hpp"

namespace vit {

enum class AblationMode { kZero, kMean };  // what replaces a removed head's output
template <>
struct EnumNames<AblationMode> {
  static constexpr std::pair<AblationMode, const char*> table[] = {{AblationMode::kZero, "zero"},
                                                                   {AblationMode::kMean, "mean"}};
};

struct LossAndAccuracy {
  double loss = 0;      // mean cross-entropy, natural log
  double accuracy = 0;  // top-1, in [0, 1]
};

struct AblationResult {
  LossAndAccuracy baseline;
  std::vector<std::vector<LossAndAccuracy>> heads;  // [L][H]
  std::vector<LossAndAccuracy> attention, mlp;      // [L]
};

// Ablates every head and every branch in turn over the images. `labels`
// int64 (n) are the true classes, or undefined: then each image's class is
// the intact model's prediction. Without gradients; a mean-mode run reads the
// images twice (the means first).
AblationResult ablate(VisionTransformer& model, const ImageBatches& images,
                      const at::Tensor& labels, AblationMode mode);

}  // namespace vit
