#pragma once
#include "model_source.hpp"

namespace vit::cli {

struct PosEmbedOptions {
  CommonOptions common;
  ModelSource model;                   // --checkpoint, --config, --out
  std::optional<int64_t> interpolate;  // --interpolate S: resize to an S x S grid first
};

std::shared_ptr<PosEmbedOptions> register_pos_embed(Cli& cli);
// Runs the command with filled-in options (also used by `vit report`).
int run_pos_embed(const PosEmbedOptions& o);

}  // namespace vit::cli
