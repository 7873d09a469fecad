// vit filters: the principal components of the patch-embedding filters (ViT
// paper, Fig. 7 left). Writes filters.json ({"patch_size", "channels",
// "explained_variance_ratio": [k], "components": [[C*P*P] x k]}), filters.csv
// and filters.png.
//
// filters.csv, one row per component, counted from 1 as in the picture:
//   component,explained_variance,explained_variance_ratio,cumulative_ratio
//   1,0.01234,0.3121,0.3121
#include "analyses/cmd_filters.hpp"

#include <filesystem>

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <torch/torch.h>
#include <nlohmann/json.hpp>

#include "cli/analysis_outputs.hpp"

#include "cli/opened_model.hpp"
#include "vit/analysis/filter_pca.hpp"
#include "vit/atomic_write.hpp"
#include "vit/io/filter_figure.hpp"
#include "vit/io/image_io.hpp"

namespace vit::cli {
namespace {

// Where the files go without --out: a folder of this name next to the checkpoint.
constexpr char kFiltersFolder[] = "filters";

namespace fs = std::filesystem;

nlohmann::json filters_json(const FilterPca& pca, const ModelConfig& model,
                            const std::string& checkpoint) {
  nlohmann::json components = nlohmann::json::array();
  for (int64_t i = 0; i < pca.components.size(0); ++i)
    components.push_back(to_doubles(pca.components[i]));
  return {{"patch_size", model.patch_size},
          {"channels", model.channels},
          {"filters", model.dim},
          {"checkpoint", checkpoint},
          {"explained_variance", to_doubles(pca.explained_variance)},
          {"explained_variance_ratio", to_doubles(pca.explained_variance_ratio)},
          {"components", components}};
}

std::string filters_csv(const FilterPca& pca) {
  const auto variance = to_doubles(pca.explained_variance);
  const auto ratio = to_doubles(pca.explained_variance_ratio);
  std::string csv = "component,explained_variance,explained_variance_ratio,cumulative_ratio\n";
  double cumulative = 0;
  for (size_t i = 0; i < ratio.size(); ++i) {
    cumulative += ratio[i];
    csv += fmt::format("{},{:.6g},{:.6g},{:.6g}\n", i + 1, variance[i], ratio[i], cumulative);
  }
  return csv;
}

std::string footer(const FilterPca& pca, const ModelConfig& model) {
  const double shown = pca.explained_variance_ratio.sum().item<double>();
  return fmt::format(
      "PCA of the {} patch-embedding filters ({}x{}x{} each), centred; components in order of "
      "variance, each tile stretched from its own minimum (black) to maximum (white). The {} "
      "shown explain {:.1f}% of the variance. Smooth, low-frequency patterns here mean the "
      "model has learned basis functions like the ViT paper's Fig. 7.",
      model.dim, model.channels, model.patch_size, model.patch_size, pca.components.size(0),
      100 * shown);
}

}  // namespace

nlohmann::json write_filters(OpenedModel& opened, const FiltersOptions& o) {
  LoadedModel& loaded = opened.loaded;
  const ModelConfig& model = loaded.config.model;
  const FilterPca pca = filter_pca(loaded.model->patch_embed->proj->weight, o.count);

  const fs::path out = output_folder(o.model, loaded, kFiltersFolder);
  const nlohmann::json json = filters_json(pca, model, loaded.path);
  write_text_atomically((out / "filters.json").string(), json.dump() + "\n");
  write_text_atomically((out / "filters.csv").string(), filters_csv(pca));
  io::FilterFigureOptions figure;
  figure.title = fmt::format("Principal components of the patch-embedding filters ({})",
                             fs::path(loaded.path).filename().string());
  figure.footer = footer(pca, model);
  io::write_png(out / "filters.png",
                io::render_filters(pca.components, pca.explained_variance_ratio, model.channels,
                                   model.patch_size, figure));
  spdlog::info("wrote filters.json, .csv and .png ({} components) to {}", pca.components.size(0),
               out.string());
  return json;
}

std::shared_ptr<FiltersOptions> register_filters(Cli& cli) {
  auto [options, cmd] = add_command<FiltersOptions>(
      cli, "filters",
      "Principal components of the patch-embedding filters (ViT paper, Fig. 7 left)",
      on_opened_model(write_filters));
  add_model_source_options(*cmd, options->model, /*reads_data=*/false, OutFolder::kBesideCheckpoint,
                           "filters.json, .csv and .png", kFiltersFolder);
  cmd->add_option("--count", options->count,
                  "components to list and draw (at most min(dim - 1, C*P*P))")
      ->check(CLI::Range(int64_t{1}, int64_t{4096}))
      ->capture_default_str();
  return options;
}

}  // namespace vit::cli
