#include "vit/train/early_stopping.hpp"

namespace vit {

bool EarlyStopping::update(double metric, int64_t step) {
  if (!has_best_ || metric > best_ + min_delta_) {
    best_ = metric;
    best_step_ = step;
    since_best_ = 0;
    has_best_ = true;
    return true;
  }
  ++since_best_;
  return false;
}

void EarlyStopping::restore(double best, int64_t best_step, int64_t since_best, bool has_best) {
  best_ = best;
  best_step_ = best_step;
  since_best_ = since_best;
  has_best_ = has_best;
}

}  // namespace vit
