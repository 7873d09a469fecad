#pragma once
#include "cli/opened_model.hpp"

namespace vit::cli {

struct AttentionOptions {
  CommonOptions common;
  ModelSource model;                 // --checkpoint, --config, --out
  std::vector<std::string> images;   // --images FILE (one; default: a validation sample)
  std::optional<std::string> query;  // --query i,j (default: class token / patch mean)
};

std::shared_ptr<AttentionOptions> register_attention(Cli& cli);
// The command on an opened model (also used by `vit report`): returns attention.json.
nlohmann::json write_attention(OpenedModel& opened, const AttentionOptions& o);

}  // namespace vit::cli
