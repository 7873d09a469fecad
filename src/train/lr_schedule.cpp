#include "vit/train/lr_schedule.hpp"

#include <algorithm>
#include <cmath>

namespace vit {

double learning_rate(const TrainConfig& train, int64_t step, int64_t steps_per_epoch) {
  const double total = static_cast<double>(train.epochs * steps_per_epoch);
  const double warmup = std::min(train.warmup_epochs * static_cast<double>(steps_per_epoch), total);
  const double s = static_cast<double>(step);
  // Step s trains with the rate at s + 1, so the first step is not wasted at 0.
  if (s < warmup) return train.lr * (s + 1.0) / warmup;
  const double progress = total > warmup ? std::min(1.0, (s - warmup) / (total - warmup)) : 1.0;
  return train.min_lr + (train.lr - train.min_lr) * 0.5 * (1.0 + std::cos(M_PI * progress));
}

}  // namespace vit
