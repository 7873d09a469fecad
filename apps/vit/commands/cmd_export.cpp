// vit export: a checkpoint's weights as a timm-layout .safetensors file, with
// the config and class names in __metadata__ so vit (and people) can read it
// back; or as a timm hub folder (config.json + model.safetensors) that timm
// opens with create_model("local-dir:FOLDER", pretrained=True).
#include "commands/cmd_export.hpp"

#include <filesystem>

#include <spdlog/spdlog.h>

#include "cli/config_files.hpp"
#include "vit/data/download/hub_download.hpp"
#include "vit/error.hpp"
#include "vit/weights/checkpoint.hpp"
#include "vit/weights/timm_hub.hpp"
#include "vit/weights/timm_layout.hpp"

namespace vit::cli {
namespace {

// Checked before the (possibly slow) load, so a typo fails at once.
void check_out_path(const std::string& out, const std::string& format) {
  if (format == "timm-hub") {
    if (std::filesystem::exists(out) && !std::filesystem::is_directory(out))
      throw Error(out + ": --out is a file; --format timm-hub writes a folder");
    return;
  }
  if (std::filesystem::path(out).extension() != ".safetensors")
    throw Error(out +
                ": --out must end in .safetensors (vit export writes the safetensors format)");
  if (std::filesystem::is_directory(out))
    throw Error(out + ": --out is a folder, expected a file name");
}

int run_export(const ExportOptions& o) {
  apply_common_options(o.common);
  check_out_path(o.out, o.format);
  spdlog::info("using checkpoint {}{}", o.checkpoint, o.ema ? ", its weights' average" : "");
  data::fetch_hf_hub_if_named(o.checkpoint);
  const LoadedModel loaded =
      o.ema ? load_model_average(o.checkpoint) : load_model(o.checkpoint, o.config);
  if (o.format == "timm-hub")
    write_timm_hub_folder(o.out, loaded.model, loaded.config, loaded.class_names);
  else
    save_safetensors_weights(o.out, loaded.model, loaded.config, loaded.class_names);
  const auto tensors = loaded.model->named_parameters().size();
  spdlog::info("wrote {}: {} tensors, {} parameters, float32, timm names", o.out, tensors,
               count_parameters(loaded.config.model));
  return 0;
}

}  // namespace

std::shared_ptr<ExportOptions> register_export(Cli& cli) {
  auto [options, cmd] = add_command<ExportOptions>(
      cli, "export", "Write a checkpoint's weights as a timm-layout .safetensors file", run_export);
  // No ExistingFile check: load_model's own message says what is wrong with the path.
  cmd->add_option("--checkpoint", options->checkpoint,
                  "checkpoint to export (.pt, .safetensors or a timm hub folder)")
      ->required();
  cmd->add_option("--config", options->config,
                  "config giving a timm .safetensors file's architecture: a file, or a shipped "
                  "config's name")
      ->transform(config_file());
  cmd->add_option("--out", options->out,
                  "output file, e.g. model.safetensors; a folder for --format timm-hub")
      ->required();
  cmd->add_option("--format", options->format,
                  "safetensors (one file, vit's config in its metadata) or timm-hub (a folder "
                  "timm opens: config.json and model.safetensors)")
      ->check(CLI::IsMember({"safetensors", "timm-hub"}))
      ->capture_default_str();
  cmd->add_flag("--ema", options->ema,
                "the average of the weights that train.ema kept (a .pt checkpoint), instead of "
                "the weights");
  return options;
}

}  // namespace vit::cli
