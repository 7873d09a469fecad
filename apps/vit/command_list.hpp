#pragma once
// The list of vit's subcommands: the one file that knows every command's
// room (commands/, analyses/, report/), beside main.cpp, above them all.
#include "cli/cli.hpp"

namespace vit::cli {

// Adds every subcommand to `cli`, in the order --help lists them.
void register_all_commands(Cli& cli);

}  // namespace vit::cli
