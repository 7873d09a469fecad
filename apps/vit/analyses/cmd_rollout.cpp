// vit rollout: attention rollout maps (Abnar & Zuidema, 2020) of validation
// samples or of the user's images: one PNG per map, grid.png and rollout.json.
#include "analyses/cmd_rollout.hpp"

#include <filesystem>

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <torch/torch.h>
#include <nlohmann/json.hpp>

#include "cli/analysis_outputs.hpp"
#include "cli/input_images.hpp"

#include "cli/opened_model.hpp"
#include "vit/analysis/rollout.hpp"
#include "vit/atomic_write.hpp"
#include "vit/io/heatmap.hpp"
#include "vit/io/image_io.hpp"

namespace vit::cli {
namespace {

namespace fs = std::filesystem;

RolloutOptions analysis_options(const RolloutCommandOptions& o, const Config& config) {
  RolloutOptions options;
  options.fusion = o.head_fusion.value_or(config.analysis.head_fusion);
  options.discard_ratio = o.discard_ratio.value_or(config.analysis.discard_ratio);
  options.source = rollout_source_of(config.model.pool);
  options.prefix_tokens = config.model.prefix_tokens();
  return options;
}

struct RolloutMap {
  std::string id, file;
  torch::Tensor image, mask;  // uint8 (C, S, S), float (g, g)
  torch::Tensor picture;      // uint8 RGB: the enlarged original beside its heat-map overlay
  int64_t label = -1;         // -1: unknown (--images)
  int64_t predicted = 0;
};

nlohmann::json rollout_json(const std::vector<RolloutMap>& maps, const RolloutOptions& options,
                            int64_t grid, const LoadedModel& loaded) {
  nlohmann::json list = nlohmann::json::array();
  for (const auto& m : maps) {
    const bool known = m.label >= 0;
    list.push_back(
        {{"image", m.id},
         {"label", known ? nlohmann::json(m.label) : nlohmann::json(nullptr)},
         {"label_class", known ? nlohmann::json(class_name(loaded.class_names, m.label)) : nullptr},
         {"predicted", m.predicted},
         {"predicted_class", class_name(loaded.class_names, m.predicted)},
         {"png", m.file},
         {"mask", map_rows(m.mask, /*decimals=*/6)}});
  }
  return {{"grid", {grid, grid}},
          {"head_fusion", enum_name(options.fusion)},
          {"discard_ratio", options.discard_ratio},
          {"source", enum_name(options.source)},
          {"checkpoint", loaded.path},
          {"maps", list}};
}

torch::Tensor rollout_grid(const std::vector<RolloutMap>& maps, const RolloutOptions& options,
                           const std::vector<std::string>& classes) {
  std::vector<OverlayPicture> pictures;
  for (const auto& m : maps)
    pictures.push_back({m.picture, m.id, m.label, m.predicted});
  return overlay_grid(
      pictures, classes,
      fmt::format(
          "Attention rollout: original | overlay ({} fusion, discard {:g}, {})",
          enum_name(options.fusion), options.discard_ratio,
          options.source == RolloutSource::kPatchMean ? "patch-mean rows" : "class-token row"));
}

// [0, 1): 1 would discard every patch link, which the rollout rejects.
CLI::Validator discard_ratio_check() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        double value = 0;
        if (!CLI::detail::lexical_cast(text, value) || !(value >= 0 && value < 1))
          return text + " is not in [0, 1)";
        return "";
      },
      "in [0, 1)");
}

}  // namespace

nlohmann::json write_rollout(OpenedModel& opened, const RolloutCommandOptions& o) {
  LoadedModel& loaded = opened.loaded;
  const Config& config = loaded.config;
  const RolloutOptions options = analysis_options(o, config);
  const AnalysisInputs inputs =
      choose_analysis_inputs(o.images, o.samples.value_or(config.analysis.rollout_samples),
                             o.common.seed.value_or(config.seed), opened);

  std::vector<RolloutMap> maps(inputs.ids.size());
  for_each_attention_batch(
      loaded.model, inputs.pixels, config, opened.device, attention_batch_size(config.model),
      [&](int64_t first, const LogitsAndAttention& out) {
        RolloutOptions batch_options = options;
        batch_options.pool_attention = out.pool_attention;
        const auto masks = rollout_masks(out.attention, batch_options).cpu();  // (b, g, g)
        const auto predicted = out.logits.argmax(/*dim=*/1).cpu();             // (b)
        for (int64_t i = 0; i < masks.size(0); ++i) {
          RolloutMap& m = maps[first + i];
          m.mask = masks[i];
          m.predicted = predicted[i].item<int64_t>();
        }
      });
  for (size_t i = 0; i < maps.size(); ++i) {
    RolloutMap& m = maps[i];
    m.id = inputs.ids[i];
    m.file = map_file_name(m.id, i, maps.size());
    m.image = inputs.pixels[static_cast<int64_t>(i)];
    if (inputs.labels.defined()) m.label = inputs.labels[static_cast<int64_t>(i)].item<int64_t>();
    m.picture = io::heatmap_beside(m.image, m.mask);
    io::write_png(fs::path(o.model.out) / m.file, m.picture);
  }
  io::write_png(fs::path(o.model.out) / "grid.png",
                rollout_grid(maps, options, loaded.class_names));
  const nlohmann::json json = rollout_json(maps, options, config.model.grid(), loaded);
  write_text_atomically((fs::path(o.model.out) / "rollout.json").string(), json.dump(2) + "\n");
  spdlog::info("wrote {} rollout maps, grid.png and rollout.json to {}", maps.size(), o.model.out);
  return json;
}

std::shared_ptr<RolloutCommandOptions> register_rollout(Cli& cli) {
  auto [options, cmd] = add_command<RolloutCommandOptions>(
      cli, "rollout", "Attention rollout maps of validation samples or your images",
      on_opened_model(write_rollout));
  add_model_source_options(*cmd, options->model, /*reads_data=*/true, OutFolder::kRequired,
                           "one PNG per map, grid.png and rollout.json");
  add_sample_options(*cmd, options->samples, options->images, "map", "analysis.rollout_samples");
  add_enum_option(*cmd, "--head-fusion", options->head_fusion,
                  "how heads are fused, default analysis.head_fusion");
  cmd->add_option(
         "--discard-ratio", options->discard_ratio,
         "fraction of the weakest patch links dropped per layer (default analysis.discard_ratio)")
      ->check(discard_ratio_check());
  return options;
}

}  // namespace vit::cli
