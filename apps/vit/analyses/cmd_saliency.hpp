#pragma once
#include "cli/opened_model.hpp"
#include "vit/analysis/saliency.hpp"

namespace vit::cli {

struct SaliencyOptions {
  CommonOptions common;
  ModelSource model;                // --checkpoint, --config, --out
  std::optional<int64_t> samples;   // --samples N (default analysis.rollout_samples)
  std::vector<std::string> images;  // --images FILE... (instead of --samples)
  SaliencyMethod method = SaliencyMethod::kGradRollout;  // --method grad|grad-x-input|grad-rollout
  std::optional<int64_t> target_class;  // --class K (default: each image's predicted class)
};

std::shared_ptr<SaliencyOptions> register_saliency(Cli& cli);
// The command on an opened model (also used by `vit report`): returns saliency.json.
nlohmann::json write_saliency(OpenedModel& opened, const SaliencyOptions& o);

}  // namespace vit::cli
