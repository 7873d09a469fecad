#pragma once
#include "cli/opened_model.hpp"

namespace vit::cli {

// Named apart from vit::RolloutOptions, the analysis settings these flags fill.
struct RolloutCommandOptions {
  CommonOptions common;
  ModelSource model;                // --checkpoint, --config, --out
  std::optional<int64_t> samples;   // --samples N (default analysis.rollout_samples)
  std::vector<std::string> images;  // --images FILE... (instead of --samples)
  std::optional<HeadFusion>
      head_fusion;  // --head-fusion mean|max|min (default analysis.head_fusion)
  std::optional<double>
      discard_ratio;  // --discard-ratio R in [0, 1) (default analysis.discard_ratio)
};

std::shared_ptr<RolloutCommandOptions> register_rollout(Cli& cli);
// The command on an opened model (also used by `vit report`): returns rollout.json.
nlohmann::json write_rollout(OpenedModel& opened, const RolloutCommandOptions& o);

}  // namespace vit::cli
