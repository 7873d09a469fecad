#pragma once
// The two ready-made plots of the tool, built on plot.hpp: curves.png of a
// training run and attn_distance.png of `vit attn-distance`.
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

namespace vit::io {

struct TrainingCurves {
  std::vector<double> train_step, train_loss, train_acc;  // one entry per logged step
  std::vector<double> val_step, val_loss, val_acc;        // one per validation; accuracy in [0, 1]
};

// Two panels, ~1000 x 500: loss against step (train as a line, validation as a
// line with dots) and accuracy against step (train and validation, the same
// way; train_acc may be empty). Returns uint8 RGB (3, H, W).
at::Tensor plot_training_curves(const TrainingCurves& curves, const std::string& title = "");

// `distance` (L, H) in pixels -> one dot per head at each layer 1..L, heads
// side by side within a layer, a legend "head 1" ... "head H" and y from 0.
// Returns uint8 RGB (3, H, W).
at::Tensor plot_attention_distance(const at::Tensor& distance, const std::string& title = "");

}  // namespace vit::io
