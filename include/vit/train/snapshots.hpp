#pragma once
// Snapshots: the model every train.snapshot_every epochs, kept in the run
// folder as snapshots/epoch-NNN.pt (full training checkpoints, so any
// command that reads a .pt reads them), for the analyses across training.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace vit {

// "snapshots/epoch-007.pt" when `step` ends epoch 7 and 7 is a multiple of
// `every` (> 0); nothing otherwise.
std::optional<std::string> snapshot_due(int64_t step, int64_t steps_per_epoch, int64_t every);

struct Snapshot {
  int64_t epoch = 0;
  std::string path;
};

// The snapshots in `run_dir`, by epoch; none when the folder has none.
std::vector<Snapshot> list_snapshots(const std::string& run_dir);

}  // namespace vit
