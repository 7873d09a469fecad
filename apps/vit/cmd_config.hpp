#pragma once
#include "cli.hpp"

namespace vit::cli {

struct ConfigOptions {
  CommonOptions common;
  bool defaults = false;   // --defaults: the whole default config as JSON
  bool reference = false;  // --reference: every key's type, default and meaning (Markdown)
};

std::shared_ptr<ConfigOptions> register_config(Cli& cli);

}  // namespace vit::cli
