#pragma once
// The list of vit's subcommands.
#include "cli/cli.hpp"

namespace vit::cli {

// Adds every subcommand to `cli`, in the order --help lists them.
void register_all_commands(Cli& cli);

}  // namespace vit::cli
