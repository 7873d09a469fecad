#pragma once
#include "cli/opened_model.hpp"

namespace vit::cli {

struct PosEmbedOptions {
  CommonOptions common;
  ModelSource model;                   // --checkpoint, --config, --out
  std::optional<int64_t> interpolate;  // --interpolate S: resize to an S x S grid first
};

std::shared_ptr<PosEmbedOptions> register_pos_embed(Cli& cli);
// The command on an opened model (also used by `vit report`): returns pos_embed.json.
nlohmann::json write_pos_embed(OpenedModel& opened, const PosEmbedOptions& o);

}  // namespace vit::cli
