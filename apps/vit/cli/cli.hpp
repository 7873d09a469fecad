#pragma once
// The command line's shared toolkit: the flags every command takes, the device and
// precision they pick, and the Cli that parses (in-process, for the tests) and runs.
// The commands are one file each, listed in command_list.cpp.
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <c10/core/Device.h>
#include <CLI/CLI.hpp>

#include "vit/config.hpp"

namespace vit::cli {

struct CommonOptions {
  std::string device = "auto";   // auto | cpu | cuda | cuda:N
  int64_t threads = 0;           // 0 = all cores
  std::optional<uint64_t> seed;  // overrides the config's seed when given
  bool quiet = false;
  bool verbose = false;
};

void add_common_options(CLI::App& cmd, CommonOptions& options);

// A flag whose value is one of an enum's names, read into `target` (E, or
// std::optional<E> left empty when the flag is absent); another name is a usage error.
template <typename E>
E& enum_target(E& target) {
  return target;
}
template <typename E>
E& enum_target(std::optional<E>& target) {
  return target.emplace();
}
template <typename Target>
CLI::Option* add_enum_option(CLI::App& cmd, const std::string& flag, Target& target,
                             const std::string& help) {
  using E = std::decay_t<decltype(enum_target(target))>;
  std::vector<std::string> names;
  for (const auto& [value, name] : EnumNames<E>::table)
    names.emplace_back(name);
  return cmd
      .add_option_function<std::string>(
          flag,
          [&target](const std::string& text) { enum_target(target) = *enum_from_name<E>(text); },
          help)
      ->check(CLI::IsMember(names));
}
// What --checkpoint, --against and --init take: an existing file or folder (a timm
// hub folder), or hf-hub:ORG/NAME[@REVISION] in the Hugging Face cache.
CLI::Validator checkpoint_source();
// --checkpoint CKPT (default runs/latest/best.pt) and --config FILE (a timm
// .safetensors file's architecture, and its data when `reads_data`).
void add_checkpoint_options(CLI::App& cmd, std::optional<std::string>& checkpoint,
                            std::optional<std::string>& config, bool reads_data);
// --precision: the autocast of an inference command.
void add_precision_option(CLI::App& cmd, Precision& precision);
// auto: the checkpoint's train.precision where the device runs it
// (vit::evaluation_precision). Throws vit::Error for fp16 off CUDA.
Precision chosen_precision(Precision asked, const Config& config, c10::Device device);
// Sets the log level, thread count and seed; flags win over the config. Call first
// in every run function.
void apply_common_options(const CommonOptions& options, const Config* config = nullptr);
// --device, or the config's `device` when the flag was left at "auto".
c10::Device chosen_device(const CommonOptions& options, const Config* config = nullptr);

// A registered subcommand: its CLI11 node and what runs when it is chosen.
struct Command {
  CLI::App* app = nullptr;
  std::function<int()> run;
};

// The root app plus every subcommand; it owns the options structs too.
class Cli {
 public:
  // An empty root: register_all_commands (apps/vit/command_list.hpp) adds every
  // command, a test adds the one it inspects.
  Cli();
  CLI::App& app() { return app_; }
  // Throws CLI::ParseError (use app().exit(e)) on bad flags.
  void parse(int argc, const char* const* argv);
  void parse(std::vector<std::string> args);  // args without the program name
  int run();                                  // the chosen subcommand's exit code
  void add(Command command) { commands_.push_back(std::move(command)); }

 private:
  CLI::App app_;
  std::vector<Command> commands_;
};

// A new subcommand: its options struct (with a `common` member for the flags every
// command takes) and its CLI11 node, for the command's own flags; `run` gets the
// options once they are parsed.
template <typename Options>
struct NewCommand {
  std::shared_ptr<Options> options;
  CLI::App* cmd;
};

// Under `parent` for a command of two words (`vit sae train`).
template <typename Options>
NewCommand<Options> add_command(Cli& cli, CLI::App& parent, const std::string& name,
                                const std::string& description,
                                std::function<int(const Options&)> run) {
  auto options = std::make_shared<Options>();
  CLI::App* cmd = parent.add_subcommand(name, description);
  add_common_options(*cmd, options->common);
  cli.add({cmd, [options, run] { return run(*options); }});
  return {options, cmd};
}
template <typename Options>
NewCommand<Options> add_command(Cli& cli, const std::string& name, const std::string& description,
                                std::function<int(const Options&)> run) {
  return add_command<Options>(cli, cli.app(), name, description, std::move(run));
}

}  // namespace vit::cli
