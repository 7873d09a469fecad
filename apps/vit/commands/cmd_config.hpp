#pragma once
#include "cli/cli.hpp"

namespace vit::cli {

struct ConfigOptions {
  CommonOptions common;
  bool defaults = false;   // --defaults: the whole default config as JSON
  bool reference = false;  // --reference: every key's type, default and meaning (Markdown)
  bool list = false;       // --list: the shipped configs, by name, with their files
};

std::shared_ptr<ConfigOptions> register_config(Cli& cli);

}  // namespace vit::cli
