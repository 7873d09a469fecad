#pragma once
#include "cli/opened_model.hpp"
#include "vit/analysis/ablation.hpp"

namespace vit::cli {

struct AblateOptions {
  CommonOptions common;
  ModelSource model;                        // --checkpoint, --config, --out
  std::optional<int64_t> samples;           // --samples N (default kLayerSamples)
  std::vector<std::string> images;          // --images FILE... (instead of --samples)
  AblationMode mode = AblationMode::kZero;  // --mode zero|mean: what replaces a removed head
};

std::shared_ptr<AblateOptions> register_ablate(Cli& cli);
// The command on an opened model (also used by `vit report`): returns ablate.json.
nlohmann::json write_ablate(OpenedModel& opened, const AblateOptions& o);

}  // namespace vit::cli
