#pragma once
#include "model_source.hpp"

namespace vit::cli {

struct LensOptions {
  CommonOptions common;
  ModelSource model;                // --checkpoint, --config, --out
  std::optional<int64_t> samples;   // --samples N (default kLensSamples)
  std::vector<std::string> images;  // --images FILE... (instead of --samples)
};

// Validation images the layer-by-layer analyses read by default: enough for a
// stable accuracy per layer, a second or two on the demo model.
constexpr int64_t kLensSamples = 1000;

std::shared_ptr<LensOptions> register_lens(Cli& cli);
// The command on an opened model (also used by `vit report`): returns lens.json.
nlohmann::json write_lens(OpenedModel& opened, const LensOptions& o);

}  // namespace vit::cli
