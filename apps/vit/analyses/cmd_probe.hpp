#pragma once
#include "cli/opened_model.hpp"

namespace vit::cli {

struct ProbeOptions {
  CommonOptions common;
  ModelSource model;               // --checkpoint, --config, --out
  std::optional<int64_t> samples;  // --samples N validation images (default kLayerSamples)
  int64_t train_samples = 5000;    // --train-samples N training images the probes learn from
  double l2 = 1e-4;                // --l2 X: the penalty l2 * ||W||^2
};

std::shared_ptr<ProbeOptions> register_probe(Cli& cli);
// The command on an opened model (also used by `vit report`): returns probe.json.
nlohmann::json write_probe(OpenedModel& opened, const ProbeOptions& o);

}  // namespace vit::cli
