#pragma once
#include "cli/cli.hpp"

namespace vit::cli {

struct TrainOptions {
  CommonOptions common;
  std::optional<std::string> config;   // --config FILE (optional with --resume)
  std::vector<std::string> overrides;  // --set KEY=VALUE
  std::string out;                     // --out DIR ("" = runs/<name>-<timestamp>)
  std::optional<std::string> resume;   // --resume CKPT
  std::optional<std::string> init;     // --init WEIGHTS (sets train.init)
  std::optional<std::string> profile;  // --profile FILE: LibTorch's profiler over a few steps
  int64_t profile_steps = 10;          // --profile-steps N
};

std::shared_ptr<TrainOptions> register_train(Cli& cli);

}  // namespace vit::cli
