#pragma once
#include "cli.hpp"

namespace vit::cli {

struct PosEmbedOptions {
  CommonOptions common;
  std::optional<std::string> checkpoint;  // --checkpoint CKPT (default runs/latest/best.pt)
  std::optional<std::string> config;      // --config FILE (timm safetensors only)
  std::optional<int64_t> interpolate;     // --interpolate S: resize to an S x S grid first
  std::string out;                        // --out DIR (default: pos-embed next to the checkpoint)
};

std::shared_ptr<PosEmbedOptions> register_pos_embed(Cli& cli);
// Runs the command with filled-in options (also used by `vit report`).
int run_pos_embed(const PosEmbedOptions& o);

}  // namespace vit::cli
