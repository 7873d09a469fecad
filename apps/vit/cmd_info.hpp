#pragma once
#include "cli.hpp"

namespace vit::cli {

struct InfoOptions {
  CommonOptions common;
  std::string config;                  // --config FILE
  std::vector<std::string> overrides;  // --set KEY=VALUE
  bool json = false;                   // --json
};

std::shared_ptr<InfoOptions> register_info(Cli& cli);

}  // namespace vit::cli
