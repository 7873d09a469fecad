#pragma once
#include "cli/cli.hpp"

namespace vit::cli {

struct InfoOptions {
  CommonOptions common;
  std::string config;                     // --config FILE ("" when not given)
  std::optional<std::string> checkpoint;  // --checkpoint CKPT (.pt or .safetensors)
  std::vector<std::string> overrides;     // --set KEY=VALUE (with --config alone)
  bool json = false;                      // --json
  std::optional<int64_t> batch;           // --batch N: the memory estimate's batch
};

std::shared_ptr<InfoOptions> register_info(Cli& cli);

}  // namespace vit::cli
