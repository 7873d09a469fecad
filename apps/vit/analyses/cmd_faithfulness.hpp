#pragma once
#include "cli/opened_model.hpp"

namespace vit::cli {

struct FaithfulnessOptions {
  CommonOptions common;
  ModelSource model;                    // --checkpoint, --config, --out
  std::optional<int64_t> samples;       // --samples N (default kFaithfulnessSamples)
  std::vector<std::string> images;      // --images FILE... (instead of --samples)
  std::optional<int64_t> step;          // --step K patches per step (default: P / 16, at least 1)
  std::optional<int64_t> target_class;  // --class K (default: each image's predicted class)
};

// Validation images by default: each costs 2 (P / step + 1) forward passes per method.
constexpr int64_t kFaithfulnessSamples = 100;

std::shared_ptr<FaithfulnessOptions> register_faithfulness(Cli& cli);
// The command on an opened model (also used by `vit report`): returns faithfulness.json.
nlohmann::json write_faithfulness(OpenedModel& opened, const FaithfulnessOptions& o);

}  // namespace vit::cli
