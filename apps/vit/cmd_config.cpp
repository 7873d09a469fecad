// vit config: the config keys themselves, for people and scripts.
#include "cmd_config.hpp"

#include <iostream>

#include "vit/config.hpp"

namespace vit::cli {
namespace {

int run_config(const ConfigOptions& o) {
  apply_common_options(o.common);
  const Config defaults;
  if (o.defaults) std::cout << config_to_json_string(defaults);
  if (o.reference) std::cout << config_reference_markdown();
  return 0;
}

}  // namespace

std::shared_ptr<ConfigOptions> register_config(Cli& cli) {
  auto [options, cmd] = add_command<ConfigOptions>(
      cli, "config", "Print the default config (--defaults) or every key's meaning (--reference)",
      run_config);
  auto* what = cmd->add_option_group("what", "what to print");
  what->add_flag("--defaults", options->defaults, "the whole default config, as JSON");
  what->add_flag("--reference", options->reference,
                 "every key with its type, default and meaning, as Markdown (docs/config.md)");
  what->require_option(1);
  return options;
}

}  // namespace vit::cli
