#pragma once
// Linear warmup from 0 to train.lr, then a cosine decay to train.min_lr.
#include <cstdint>

#include "vit/config.hpp"

namespace vit {

// Learning rate for optimizer step `step` (0-based) of a run with
// `steps_per_epoch` steps per epoch and train.epochs epochs.
double learning_rate(const TrainConfig& train, int64_t step, int64_t steps_per_epoch);

}  // namespace vit
