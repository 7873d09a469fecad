// vit attn-distance: the mean attention distance of every head in every layer
// (ViT paper, Fig. 7 right), averaged over validation samples or the user's
// images. Writes attn_distance.json, attn_distance.csv and attn_distance.png,
// and prints a layer-by-head table.
//
// attn_distance.csv is long-format, one row per head, layers and heads counted
// from 1 as in the plot:
//   layer,head,distance_px
//   1,1,5.2134
#include "analyses/cmd_attn_distance.hpp"

#include <cmath>
#include <filesystem>
#include <iostream>

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <torch/torch.h>
#include <nlohmann/json.hpp>

#include "cli/input_images.hpp"

#include "cli/opened_model.hpp"
#include "vit/analysis/attention_distance.hpp"
#include "vit/atomic_write.hpp"
#include "vit/io/figures.hpp"
#include "vit/io/image_io.hpp"

namespace vit::cli {
namespace {

// Where the files go without --out: a folder of this name next to the checkpoint.
constexpr char kAttnDistanceFolder[] = "attn-distance";

namespace fs = std::filesystem;

// Four decimals of a pixel are far below anything a head's distance means.
double rounded(double value) {
  return std::round(value * 1e4) / 1e4;
}

std::vector<std::vector<double>> distance_rows(const torch::Tensor& distance) {
  std::vector<std::vector<double>> rows(static_cast<size_t>(distance.size(0)));
  for (int64_t l = 0; l < distance.size(0); ++l)
    for (int64_t h = 0; h < distance.size(1); ++h)
      rows[l].push_back(rounded(distance[l][h].item<double>()));
  return rows;
}

std::string distance_csv(const std::vector<std::vector<double>>& rows) {
  std::string csv = "layer,head,distance_px\n";
  for (size_t l = 0; l < rows.size(); ++l)
    for (size_t h = 0; h < rows[l].size(); ++h)
      csv += fmt::format("{},{},{}\n", l + 1, h + 1, rows[l][h]);
  return csv;
}

std::string distance_table(const std::vector<std::vector<double>>& rows) {
  std::string table = "layer";
  const size_t heads = rows.empty() ? 0 : rows.front().size();
  for (size_t h = 0; h < heads; ++h)
    table += fmt::format("  {:>7}", fmt::format("head {}", h + 1));
  table += fmt::format("  {:>7}\n", "mean");
  for (size_t l = 0; l < rows.size(); ++l) {
    table += fmt::format("{:>5}", l + 1);
    double sum = 0;
    for (const double d : rows[l]) {
      table += fmt::format("  {:7.2f}", d);
      sum += d;
    }
    table += fmt::format("  {:7.2f}\n", sum / static_cast<double>(heads));
  }
  return table;
}

}  // namespace

nlohmann::json write_attn_distance(OpenedModel& opened, const AttnDistanceOptions& o) {
  LoadedModel& loaded = opened.loaded;
  const Config& config = loaded.config;
  const AnalysisInputs inputs =
      choose_analysis_inputs(o.images, o.samples.value_or(config.analysis.distance_samples),
                             o.common.seed.value_or(config.seed), opened);
  const bool renormalize = o.renormalize.value_or(config.analysis.renormalize);

  AttentionDistanceAccumulator accumulator(config.model.patch_size, renormalize,
                                           config.model.prefix_tokens());
  for_each_attention_batch(
      loaded.model, inputs.pixels, config, opened.device, attention_batch_size(config.model),
      [&](int64_t, const LogitsAndAttention& out) { accumulator.add(out.attention); });
  const auto rows = distance_rows(accumulator.mean());  // (L, H)

  const fs::path out = output_folder(o.model, loaded, kAttnDistanceFolder);
  const nlohmann::json json = {{"patch_size", config.model.patch_size},
                               {"grid", accumulator.grid()},
                               {"samples", accumulator.images()},
                               {"renormalize", renormalize},
                               {"checkpoint", loaded.path},
                               {"distance", rows}};
  write_text_atomically((out / "attn_distance.json").string(), json.dump(2) + "\n");
  write_text_atomically((out / "attn_distance.csv").string(), distance_csv(rows));
  const std::string images =
      fmt::format("{} image{}", accumulator.images(), accumulator.images() == 1 ? "" : "s");
  const std::string title = fmt::format("Mean attention distance ({}{})", images,
                                        renormalize ? ", rows renormalised" : "");
  io::write_png(out / "attn_distance.png", io::plot_attention_distance(accumulator.mean(), title));

  std::cout << fmt::format("Mean attention distance in pixels ({}, {} px patches, {}x{} grid{})\n",
                           images, config.model.patch_size, accumulator.grid(), accumulator.grid(),
                           renormalize ? ", rows renormalised" : "")
            << distance_table(rows);
  spdlog::info("wrote attn_distance.json, .csv and .png to {}", out.string());
  return json;
}

std::shared_ptr<AttnDistanceOptions> register_attn_distance(Cli& cli) {
  auto [options, cmd] = add_command<AttnDistanceOptions>(
      cli, "attn-distance",
      "Mean attention distance of every head in every layer (ViT paper, Fig. 7)",
      on_opened_model(write_attn_distance));
  add_model_source_options(*cmd, options->model, /*reads_data=*/true, OutFolder::kBesideCheckpoint,
                           "attn_distance.json, .csv (layer,head,distance_px rows) and .png",
                           kAttnDistanceFolder);
  add_sample_options(*cmd, options->samples, options->images, "average",
                     "analysis.distance_samples");
  // Two callback flags rather than add_flag("--renormalize,!--no-renormalize") into the
  // optional: CLI11 2.1 takes a std::optional<bool> for a counter (it is constructible from
  // an integer) and sets it to false at registration, so "not given" would be lost.
  // disable_flag_override rejects "--renormalize=false" instead of silently ignoring it.
  auto* renormalize =
      cmd->add_flag_callback(
             "--renormalize", [options = options] { options->renormalize = true; },
             "divide each attention row by its sum after dropping the class token (default "
             "analysis.renormalize)")
          ->disable_flag_override();
  cmd->add_flag_callback(
         "--no-renormalize", [options = options] { options->renormalize = false; },
         "use the raw attention rows even when analysis.renormalize is true")
      ->disable_flag_override()
      ->excludes(renormalize);
  return options;
}

}  // namespace vit::cli
