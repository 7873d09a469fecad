#include "cli.hpp"

#include <algorithm>

#include <spdlog/spdlog.h>

#include "cmd_data.hpp"
#include "cmd_info.hpp"
#include "vit/device.hpp"

namespace vit::cli {

void add_common_options(CLI::App& cmd, CommonOptions& options) {
  cmd.add_option("--device", options.device, "auto | cpu | cuda | cuda:N")
      ->capture_default_str();
  cmd.add_option("--threads", options.threads, "CPU threads for LibTorch (0 = all cores)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  cmd.add_option("--seed", options.seed, "random seed (default: the config's seed)")
      ->check(CLI::NonNegativeNumber);
  auto* quiet = cmd.add_flag("-q,--quiet", options.quiet, "log warnings and errors only");
  cmd.add_flag("-v,--verbose", options.verbose, "log debug detail")->excludes(quiet);
}

void apply_common_options(const CommonOptions& options) {
  if (options.quiet) spdlog::set_level(spdlog::level::warn);
  if (options.verbose) spdlog::set_level(spdlog::level::debug);
  set_threads(options.threads);
  if (options.seed) seed_everything(*options.seed);
}

Cli::Cli(bool register_all) : app_("vit: train Vision Transformers and see what they attend to") {
  app_.require_subcommand(1);
  app_.set_version_flag("--version", "vit 0.1.0");
  if (!register_all) return;
  register_info(*this);
  register_data(*this);
}

void Cli::parse(int argc, const char* const* argv) { app_.parse(argc, argv); }

void Cli::parse(std::vector<std::string> args) {
  std::reverse(args.begin(), args.end());  // CLI11 takes the arguments in reverse order
  app_.parse(args);
}

int Cli::run() {
  for (const auto& command : commands_) {
    if (command.app->parsed()) return command.run();
  }
  return 0;
}

}  // namespace vit::cli
