#pragma once
#include "cli/opened_model.hpp"

namespace vit::cli {

struct LensOptions {
  CommonOptions common;
  ModelSource model;                // --checkpoint, --config, --out
  std::optional<int64_t> samples;   // --samples N (default kLayerSamples)
  std::vector<std::string> images;  // --images FILE... (instead of --samples)
};

std::shared_ptr<LensOptions> register_lens(Cli& cli);
// The command on an opened model (also used by `vit report`): returns lens.json.
nlohmann::json write_lens(OpenedModel& opened, const LensOptions& o);

}  // namespace vit::cli
