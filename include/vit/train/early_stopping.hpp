#pragma once
// Counts validations without improvement of the validation accuracy.
#include <cstdint>

namespace vit {

class EarlyStopping {
 public:
  // patience 0 never stops; an improvement must exceed best by more than min_delta.
  EarlyStopping(int64_t patience, double min_delta) : patience_(patience), min_delta_(min_delta) {}

  // Records one validation; returns true when it is a new best.
  bool update(double metric, int64_t step);
  bool should_stop() const { return patience_ > 0 && since_best_ >= patience_; }

  double best() const { return best_; }
  int64_t best_step() const { return best_step_; }
  int64_t since_best() const { return since_best_; }
  bool has_best() const { return has_best_; }
  // For resuming from a checkpoint.
  void restore(double best, int64_t best_step, int64_t since_best, bool has_best);

 private:
  int64_t patience_;
  double min_delta_;
  double best_ = 0.0;
  int64_t best_step_ = 0;
  int64_t since_best_ = 0;
  bool has_best_ = false;
};

}  // namespace vit
