#pragma once
// An exponential moving average of the weights (train.ema), as timm's ModelEmaV3:
// after optimizer step t (counted from 1),
//   decay_t = 0 at t = 1 (the average starts as the weights), then
//   decay_t = decay, or with warmup min(decay, 1 - t^(-2/3)),
//   average = average + (1 - decay_t) (weights - average)   (lerp).
// Kept in fp32 on the training device, and evaluated beside the live weights.
#include <cstdint>
#include <string>

#include <ATen/core/Tensor.h>

#include "vit/config.hpp"
#include "vit/model/vision_transformer.hpp"
#include "vit/train/optimizer.hpp"

namespace torch::serialize {
class InputArchive;
class OutputArchive;
}  // namespace torch::serialize

namespace vit {

// timm's ModelEmaV3.get_decay(step), step counted from 1.
double ema_decay(const ModelEmaConfig& config, int64_t step);

class ModelEma {
 public:
  // Starts as a copy of `model`, whose trained parameters `optimizer` holds.
  ModelEma(const VisionTransformer& model, const Optimizer& optimizer, ModelEmaConfig config);

  void update(int64_t step);  // after optimizer step `step` (from 1)
  // The average's weights, in eval mode, on the training device.
  VisionTransformer& model() { return average_; }
  const ModelEmaConfig& config() const { return config_; }

  // As a model's parameters, so that a checkpoint's average reads back as a model.
  void save(torch::serialize::OutputArchive& archive) const;
  // In place. Throws vit::Error naming `source` if it does not fit.
  void load(torch::serialize::InputArchive& archive, const std::string& source);
  // For a resumed run whose checkpoint has no average.
  void restart_from_weights();

 private:
  const Optimizer& optimizer_;
  VisionTransformer live_;  // the trained model
  ModelEmaConfig config_;
  VisionTransformer average_{nullptr};
  at::Tensor values_;  // fp32, laid out as optimizer_.values()
};

}  // namespace vit
