#pragma once
#include "model_source.hpp"

namespace vit::cli {

struct EvalOptions {
  CommonOptions common;
  ModelSource model;               // --checkpoint, --config, --out
  std::string split = "test";      // --split val|test
  std::string precision = "auto";  // --precision auto|fp32|bf16|fp16
};

std::shared_ptr<EvalOptions> register_eval(Cli& cli);
// Runs the command with filled-in options (also used by `vit report`).
int run_eval(const EvalOptions& o);

}  // namespace vit::cli
