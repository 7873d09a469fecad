// vit config: the config keys themselves, for people and scripts.
#include "commands/cmd_config.hpp"

#include <iostream>

#include <fmt/format.h>

#include "cli/config_files.hpp"
#include "vit/config.hpp"
#include "vit/error.hpp"

namespace vit::cli {
namespace {

int run_config(const ConfigOptions& o) {
  apply_common_options(o.common);
  const Config defaults;
  if (o.defaults) std::cout << config_to_json_string(defaults);
  if (o.reference) std::cout << config_reference_markdown();
  if (o.list) {
    const auto configs = shipped_configs();
    if (configs.empty()) throw Error("no shipped configs beside this vit binary");
    for (const ShippedConfig& config : configs)
      std::cout << fmt::format("{:<24} {}\n", config.name, config.path.string());
  }
  return 0;
}

}  // namespace

std::shared_ptr<ConfigOptions> register_config(Cli& cli) {
  auto [options, cmd] = add_command<ConfigOptions>(
      cli, "config",
      "Print the default config (--defaults), every key's meaning (--reference) or the shipped "
      "configs (--list)",
      run_config);
  auto* what = cmd->add_option_group("what", "what to print");
  what->add_flag("--defaults", options->defaults, "the whole default config, as JSON");
  what->add_flag("--reference", options->reference,
                 "every key with its type, default and meaning, as Markdown (docs/config.md)");
  what->add_flag("--list", options->list,
                 "the shipped configs that --config takes by name, with their files");
  what->require_option(1);
  return options;
}

}  // namespace vit::cli
