#pragma once
#include "cli.hpp"

namespace vit::cli {

struct FiltersOptions {
  CommonOptions common;
  std::optional<std::string> checkpoint;  // --checkpoint CKPT (default runs/latest/best.pt)
  std::optional<std::string> config;      // --config FILE (timm safetensors only)
  int64_t count = 28;                     // --count K: components drawn and listed
  std::string out;                        // --out DIR (default: filters next to the checkpoint)
};

std::shared_ptr<FiltersOptions> register_filters(Cli& cli);
// Runs the command with filled-in options (also used by `vit report`).
int run_filters(const FiltersOptions& o);

}  // namespace vit::cli
