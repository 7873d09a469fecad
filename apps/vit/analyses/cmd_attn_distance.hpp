#pragma once
#include "cli/opened_model.hpp"

namespace vit::cli {

struct AttnDistanceOptions {
  CommonOptions common;
  ModelSource model;                // --checkpoint, --config, --out
  std::optional<int64_t> samples;   // --samples N (default analysis.distance_samples)
  std::vector<std::string> images;  // --images FILE... (instead of --samples)
  std::optional<bool>
      renormalize;  // --renormalize | --no-renormalize (default analysis.renormalize)
};

std::shared_ptr<AttnDistanceOptions> register_attn_distance(Cli& cli);
// The command on an opened model (also used by `vit report`): returns attn_distance.json.
nlohmann::json write_attn_distance(OpenedModel& opened, const AttnDistanceOptions& o);

}  // namespace vit::cli
