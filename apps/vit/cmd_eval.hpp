#pragma once
#include "cli.hpp"

namespace vit::cli {

struct EvalOptions {
  CommonOptions common;
  std::optional<std::string> checkpoint;  // --checkpoint CKPT (default runs/latest/best.pt)
  std::optional<std::string> config;      // --config FILE (timm safetensors only)
  std::string split = "test";             // --split val|test
  std::string out;                        // --out DIR (default: next to the checkpoint)
  std::string precision = "auto";         // --precision auto|fp32|bf16|fp16
};

std::shared_ptr<EvalOptions> register_eval(Cli& cli);
// Runs the command with filled-in options (also used by `vit report`).
int run_eval(const EvalOptions& o);

}  // namespace vit::cli
