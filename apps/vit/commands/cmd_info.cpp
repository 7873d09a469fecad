// vit info: the architecture, parameter count and FLOPs of a config or checkpoint,
// and the memory of one training step (commands/memory_report).
#include "commands/cmd_info.hpp"

#include <iostream>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "cli/config_files.hpp"
#include "cli/number_text.hpp"
#include "commands/memory_report.hpp"
#include "vit/config.hpp"
#include "vit/cpu_isa.hpp"
#include "vit/data/download/hub_download.hpp"
#include "vit/error.hpp"
#include "vit/infer/precision.hpp"
#include "vit/model/vision_transformer.hpp"
#include "vit/weights/checkpoint.hpp"
#include "vit/weights/timm_hub.hpp"

namespace vit::cli {

namespace {

struct Described {
  Config config;
  std::string checkpoint;                // "" for a config file
  std::vector<std::string> class_names;  // a checkpoint's label order
};

nlohmann::json describe(const Config& c) {
  const auto& m = c.model;
  return {{"name", c.name},
          {"parameters", count_parameters(m)},
          {"flops_per_image", forward_flops(m)},
          {"image_size", m.image_size},
          {"patch_size", m.patch_size},
          {"channels", m.channels},
          {"grid", m.grid()},
          {"tokens", m.tokens()},
          {"prefix_tokens", m.prefix_tokens()},
          {"registers", m.registers},
          {"family", model_family(m)},
          {"dim", m.dim},
          {"depth", m.depth},
          {"heads", m.heads},
          {"head_dim", m.head_dim()},
          {"inner_dim", m.inner_dim()},
          {"mlp_dim", m.mlp_dim},
          {"pool", enum_name(m.pool)},
          {"qkv_bias", m.qkv_bias},
          {"num_classes", m.num_classes}};
}

// "1 class token + 4 registers": the tokens before the patches.
std::string prefix_text(const ModelConfig& m) {
  std::vector<std::string> parts;
  if (m.class_token) parts.emplace_back("1 class token");
  if (m.distilled) parts.emplace_back("1 distillation token");
  if (m.registers > 0) parts.push_back(fmt::format("{} registers", m.registers));
  return parts.empty() ? "no prefix tokens" : fmt::format("{}", fmt::join(parts, " + "));
}

// "LayerScale 1e-05, norm_pre, ...": the options beyond the 2020 ViT.
std::string options_text(const ModelConfig& m) {
  std::vector<std::string> parts;
  if (m.layer_scale()) parts.push_back(fmt::format("LayerScale {:g}", m.init_values));
  if (m.prefix_unembedded()) parts.emplace_back("prefix unembedded");
  if (m.pre_norm) parts.emplace_back("norm_pre");
  if (m.fc_norm) parts.emplace_back("fc_norm");
  if (!m.patch_bias) parts.emplace_back("no patch bias");
  if (m.act_layer != Activation::kGelu) parts.emplace_back(enum_name(m.act_layer));
  return parts.empty() ? "none" : fmt::format("{}", fmt::join(parts, ", "));
}

void print_text(const Config& c) {
  const auto& m = c.model;
  std::cout << fmt::format("{}: Vision Transformer ({})\n", c.name, model_family(m))
            << fmt::format("  input      {}x{}x{} ({} channel{})\n", m.channels, m.image_size,
                           m.image_size, m.channels, m.channels == 1 ? "" : "s")
            << fmt::format("  patches    {}x{} px -> {}x{} grid = {} patches + {} = {} tokens\n",
                           m.patch_size, m.patch_size, m.grid(), m.grid(), m.num_patches(),
                           prefix_text(m), m.tokens())
            << fmt::format("  width      dim {}, {} heads x {} = attention width {}, MLP {}\n",
                           m.dim, m.heads, m.head_dim(), m.inner_dim(), m.mlp_dim)
            << fmt::format("  depth      {} blocks, qkv bias {}, pool '{}', {} classes\n", m.depth,
                           m.qkv_bias ? "on" : "off", enum_name(m.pool), m.num_classes)
            << fmt::format("  options    {}\n", options_text(m))
            << fmt::format("  parameters {}\n", with_commas(count_parameters(m)))
            << fmt::format("  FLOPs      {} per image forward ({:.3f} GFLOPs)\n",
                           with_commas(forward_flops(m)), forward_flops(m) / 1e9);
}

// What to describe: the checkpoint's own config (a timm file takes its
// architecture from --config), or the --config file with its overrides.
Described describe_source(const InfoOptions& o) {
  if (!o.checkpoint) return {load_config(o.config, o.overrides), {}, {}};
  if (!o.overrides.empty())
    throw Error("--set changes a --config file; it cannot change the checkpoint " + *o.checkpoint);
  const std::optional<std::string> config_path =
      o.config.empty() ? std::nullopt : std::optional<std::string>(o.config);
  data::fetch_hf_hub_if_named(*o.checkpoint);
  LoadedModel loaded = load_model(*o.checkpoint, config_path);
  return {loaded.config, loaded.path, loaded.class_names};
}

// What train.precision becomes on this machine's device, or why it cannot
// run here (fp16 off CUDA).
struct MachinePrecision {
  std::optional<PrecisionChoice> choice;
  std::string problem;
};

MachinePrecision precision_here(const Config& config, c10::Device device) {
  try {
    return {choose_precision(config.train.precision, device), ""};
  } catch (const Error& e) {
    return {std::nullopt, e.what()};
  }
}

// The memory estimate at --batch, or at train.batch_size; none where the
// precision cannot run on the device.
std::optional<MemoryReport> memory_here(const InfoOptions& o, const Config& config,
                                        const MachinePrecision& precision, c10::Device device) {
  const int64_t batch = o.batch.value_or(config.train.batch_size);
  check_step_batch(config.train, batch);
  if (!precision.choice) return std::nullopt;
  return memory_report(config, batch, {precision.choice->precision, device.is_cuda()});
}

int run_info(const InfoOptions& o) {
  apply_common_options(o.common);
  const Described d = describe_source(o);
  const c10::Device device = chosen_device(o.common, &d.config);
  const MachinePrecision precision = precision_here(d.config, device);
  const std::optional<MemoryReport> memory = memory_here(o, d.config, precision, device);
  if (o.json) {
    nlohmann::json out = describe(d.config);
    out["precision"] =
        precision.choice ? nlohmann::json(enum_name(precision.choice->precision)) : nullptr;
    out["cpu_isa"] = cpu_isa_name(cpu_isa());
    out["memory_estimate"] = memory ? memory_json(*memory) : nullptr;
    if (!d.checkpoint.empty()) {
      out["checkpoint"] = d.checkpoint;
      out["class_names"] = d.class_names;
    }
    std::cout << out.dump(2) << "\n";
  } else {
    print_text(d.config);
    std::cout << fmt::format("  machine    CPU {}, {}\n", cpu_isa_name(cpu_isa()),
                             precision.choice ? precision.choice->description : precision.problem);
    if (memory) std::cout << memory_text(*memory);
    if (!d.checkpoint.empty()) std::cout << fmt::format("  checkpoint {}\n", d.checkpoint);
  }
  return 0;
}

}  // namespace

std::shared_ptr<InfoOptions> register_info(Cli& cli) {
  auto [options, cmd] =
      add_command<InfoOptions>(cli, "info",
                               "Show a config's or checkpoint's architecture, parameter count, "
                               "FLOPs and a training step's memory",
                               run_info);
  auto* source = cmd->add_option_group(
      "source", "what to describe: --config, --checkpoint, or both for a timm .safetensors file");
  source
      ->add_option("--config", options->config,
                   "JSON config file, or a shipped config's name (vit config --list)")
      ->transform(config_file());
  source
      ->add_option("--checkpoint", options->checkpoint,
                   "checkpoint: a .pt, a .safetensors, or a timm hub folder")
      ->check(checkpoint_source());
  source->require_option();  // at least one of the two
  cmd->add_option("--set", options->overrides, "override a --config key, e.g. --set model.depth=8");
  cmd->add_option("--batch", options->batch,
                  "estimate one training step's memory at N images per optimizer step (default: "
                  "train.batch_size), split into train.accum_steps micro-batches, with the "
                  "config's precision, optimizer, checkpointing and EMA (docs/training.md, "
                  "\"When it does not fit\")");
  cmd->add_flag("--json", options->json, "print JSON instead of text");
  return options;
}

}  // namespace vit::cli
