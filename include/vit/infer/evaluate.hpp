#pragma once
// Evaluation of a model on a whole split: loss, accuracy, per-class accuracy,
// the confusion matrix and every image's loss (for "worst images" pictures).
#include <string>

#include <ATen/core/Tensor.h>

#include "vit/data/batch_loader.hpp"
#include "vit/model/vision_transformer.hpp"

namespace vit {

struct EvalResult {
  double loss = 0;      // mean cross-entropy (no label smoothing)
  double accuracy = 0;  // fraction in [0, 1]
  int64_t count = 0;    // images evaluated
  // Images whose label is among the five highest logits, with more than
  // five classes (top-5 accuracy = top5_correct / count); else -1.
  int64_t top5_correct = -1;
  double top5_accuracy() const { return count > 0 ? double(top5_correct) / double(count) : 0.0; }
  bool has_top5() const { return top5_correct >= 0; }
  at::Tensor per_class_accuracy;  // float64 (K); NaN for a class with no images
  at::Tensor confusion;           // int64 (K, K): rows true class, columns predicted
  at::Tensor losses;              // float (N): each image's loss, in loader order
  at::Tensor predictions;         // int64 (N)
  at::Tensor labels;              // int64 (N)
};

// `loader` must be an evaluation loader (train = false), in memory or streamed. Runs in eval mode
// under no_grad, with autocast for "bf16"/"fp16". Leaves the model in eval mode.
EvalResult evaluate(VisionTransformer& model, const data::BatchSource& loader, int64_t num_classes,
                    Precision precision);

// Accuracy of each class from a confusion matrix (rows: the true class):
// float64 (K), NaN for a class with no images.
at::Tensor per_class_accuracy(const at::Tensor& confusion);

}  // namespace vit
