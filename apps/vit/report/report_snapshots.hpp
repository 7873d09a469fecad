#pragma once
// The report's look across training: for every snapshot a run kept
// (train.snapshot_every), the logit-lens accuracy of each layer and the CKA
// of each layer with the same layer of best.pt, on the same validation images.
#include <filesystem>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/opened_model.hpp"
#include "vit/train/snapshots.hpp"

namespace vit::cli {

// Writes snapshots.json ({"epochs": [S], "lens_accuracy": [S][L+1],
// "cka_with_best": [S][L+1]}) and snapshots.png into `out`; returns the JSON.
// `best` is the run's opened best.pt; `samples` validation images, drawn with `seed`.
nlohmann::json write_snapshot_analysis(OpenedModel& best, const std::vector<Snapshot>& snapshots,
                                       const std::filesystem::path& out, int64_t samples,
                                       uint64_t seed);

}  // namespace vit::cli
