#include "cli/cli.hpp"

#include <algorithm>
#include <filesystem>

#include <spdlog/spdlog.h>

#include "cli/config_files.hpp"
#include "cli/version.hpp"
#include "vit/allocator.hpp"
#include "vit/cpu_isa.hpp"
#include "vit/device.hpp"
#include "vit/error.hpp"
#include "vit/hf_cache.hpp"
#include "vit/infer/precision.hpp"
#include "vit/terminal_log.hpp"

namespace vit::cli {

void add_common_options(CLI::App& cmd, CommonOptions& options) {
  cmd.add_option("--device", options.device, "auto | cpu | cuda | cuda:N")->capture_default_str();
  // The same bound as the config's `threads`; more threads than this are a typo.
  cmd.add_option("--threads", options.threads, "CPU threads for LibTorch (0 = all cores)")
      ->check(CLI::Range(int64_t{0}, kMaxThreads))
      ->capture_default_str();
  cmd.add_option("--seed", options.seed, "random seed (default: the config's seed)")
      ->check(CLI::NonNegativeNumber);
  auto* quiet = cmd.add_flag("-q,--quiet", options.quiet, "log warnings and errors only");
  cmd.add_flag("-v,--verbose", options.verbose, "log debug detail")->excludes(quiet);
}

CLI::Validator checkpoint_source() {
  return CLI::Validator(
      [](std::string& value) -> std::string {
        if (is_hf_hub_name(value) || std::filesystem::exists(value)) return "";
        return "Path does not exist: " + value;
      },
      "PATH or hf-hub:ORG/NAME");
}

void add_checkpoint_options(CLI::App& cmd, std::optional<std::string>& checkpoint,
                            std::optional<std::string>& config, bool reads_data) {
  cmd.add_option("--checkpoint", checkpoint,
                 "checkpoint: a .pt, a .safetensors, a timm hub folder (config.json and "
                 "model.safetensors) or hf-hub:ORG/NAME[@REVISION] in the Hugging Face cache; "
                 "default runs/latest/best.pt")
      ->check(checkpoint_source());
  cmd.add_option("--config", config,
                 std::string("config giving a timm .safetensors file's architecture") +
                     (reads_data ? " and data" : "") + ": a file, or a shipped config's name")
      ->transform(config_file());
}

void add_precision_option(CLI::App& cmd, Precision& precision) {
  add_enum_option(cmd, "--precision", precision,
                  "autocast; auto (the default): the checkpoint's train.precision, as the final "
                  "test of `vit train` ran (fp32 for fp16 off CUDA)");
}

Precision chosen_precision(Precision asked, const Config& config, c10::Device device) {
  if (asked == Precision::kAuto) return evaluation_precision(config.train.precision, device);
  if (asked == Precision::kFp16 && !device.is_cuda())
    throw Error("--precision fp16 needs a CUDA device (on CPU use bf16)");
  return asked;
}

void apply_common_options(const CommonOptions& options, const Config* config) {
  // The logger keeps info, so a run's train.log still records every validation.
  if (options.quiet) quiet_terminal();
  cpu_isa();  // a VIT_CPU_ISA it cannot read stops every command here, with its one line
  if (options.verbose) spdlog::set_level(spdlog::level::debug);
  // Every command checks an explicit --device, even one that computes on the
  // CPU only (info, export); the ones that run a model resolve it again,
  // with the config's device, through chosen_device().
  if (!is_auto_device(options.device)) resolve_device(options.device);
  const int threads =
      set_threads(options.threads > 0 || !config ? options.threads : config->threads);
  spdlog::debug("LibTorch uses {} threads", threads);
  flush_subnormals_to_zero();
  reuse_freed_tensor_memory();
  if (options.seed) {
    seed_everything(*options.seed);
  } else if (config) {
    seed_everything(config->seed);
  }
}

c10::Device chosen_device(const CommonOptions& options, const Config* config) {
  const c10::Device device =
      resolve_device(config ? device_spec(options.device, config->device) : options.device);
  spdlog::debug("device {}", device.str());
  return device;
}

Cli::Cli() : app_("vit: train Vision Transformers and see what they attend to") {
  app_.require_subcommand(1);
  // A callback, so the version text (which asks CUDA) is made only when asked for.
  app_.add_flag_callback(
      "--version", [] { throw CLI::CallForVersion(version_text(), 0); },
      "print vit's version, the LibTorch it was built against, CUDA and the BLAS in use, and exit");
}

void Cli::parse(int argc, const char* const* argv) {
  app_.parse(argc, argv);
}

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
