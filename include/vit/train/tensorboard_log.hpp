#pragma once
// The run's TensorBoard events (train.tensorboard), written by rank 0 beside
// metrics.jsonl: each validation record's numeric fields under their
// metrics.jsonl names at the record's step, and, at the cadence of the plain
// progress lines (train.log_every_s), the running training loss, learning
// rate and images/s under progress/.
#include <chrono>
#include <cstdint>
#include <string>

#include "vit/io/tensorboard.hpp"
#include "vit/train/metrics_log.hpp"

namespace vit {

class TensorBoardLog {
 public:
  // A new events file in run_dir; a run resumed at first_step > 0 tells
  // TensorBoard to drop what the earlier file recorded after that step.
  TensorBoardLog(const std::string& run_dir, int64_t first_step, double log_every_s);
  const std::string& path() const { return events_.path(); }

  void record(const ValidationRecord& record);
  // Written when log_every_s has passed since the last one written (and the first time).
  void progress(int64_t step, double train_loss, double lr, double images_per_sec);

 private:
  io::EventsWriter events_;
  std::chrono::steady_clock::duration every_;
  std::chrono::steady_clock::time_point last_progress_{};
  bool progress_written_ = false;
};

}  // namespace vit
