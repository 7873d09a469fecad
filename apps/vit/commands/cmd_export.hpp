#pragma once
#include "cli/cli.hpp"

namespace vit::cli {

struct ExportOptions {
  CommonOptions common;
  std::string checkpoint;              // --checkpoint CKPT (.pt or .safetensors)
  std::optional<std::string> config;   // --config FILE (timm safetensors only)
  std::string out;                     // --out FILE.safetensors, or a folder for timm-hub
  std::string format = "safetensors";  // --format safetensors | timm-hub
  bool ema = false;                    // --ema: the weights' average (train.ema)
};

std::shared_ptr<ExportOptions> register_export(Cli& cli);

}  // namespace vit::cli
