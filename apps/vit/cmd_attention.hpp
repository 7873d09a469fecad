#pragma once
#include "cli.hpp"

namespace vit::cli {

struct AttentionOptions {
  CommonOptions common;
  std::optional<std::string> checkpoint;  // --checkpoint CKPT (default runs/latest/best.pt)
  std::optional<std::string> config;      // --config FILE (timm safetensors only)
  std::string out;                        // --out DIR (default: attention next to the checkpoint)
  std::vector<std::string> images;        // --images FILE (one; default: a validation sample)
  std::optional<std::string> query;       // --query i,j (default: class token / patch mean)
};

std::shared_ptr<AttentionOptions> register_attention(Cli& cli);
// Runs the command with filled-in options (also used by `vit report`).
int run_attention(const AttentionOptions& o);

}  // namespace vit::cli
