#pragma once
// The training statistics gathered since the last validation, on the host, and
// their place in a checkpoint's meta record, so that a run resumed between two
// validations writes the same next record.
#include <cstdint>
#include <string>

#include "vit/weights/checkpoint.hpp"

namespace vit {

struct RunningTotals {
  double loss_sum = 0;       // sum of per-step mean losses
  int64_t correct = 0;       // training images classified right
  int64_t seen = 0;          // training images
  int64_t steps = 0;         // optimizer steps
  double train_seconds = 0;  // time in training steps (for images/s)
};

// Into meta.trainer, as "since_validation".
void store_running_totals(CheckpointMeta& meta, const RunningTotals& totals);

// Out of meta.trainer: zeros when the checkpoint has none (it was saved at a
// validation); a vit::Error naming `source` when the record is damaged.
RunningTotals stored_running_totals(const CheckpointMeta& meta, const std::string& source);

}  // namespace vit
