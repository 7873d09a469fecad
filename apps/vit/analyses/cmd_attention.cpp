// vit attention: the raw attention of one image, as a layers x heads grid of
// the query row's maps: the class token's row (pool "cls"), the mean of the
// patch rows (pool "mean" or "map"), or one patch's row (--query i,j). Writes
// attention.json ({"layers": L, "heads": H, "query": q, "maps": [L][H][g][g]}),
// attention.csv and attention.png.
//
// attention.csv, one row per layer, head and key patch (counted from 1 for
// layers and heads, from 0 for patch rows and columns):
//   layer,head,row,column,attention
#include "analyses/cmd_attention.hpp"

#include <filesystem>

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <torch/torch.h>
#include <nlohmann/json.hpp>

#include "cli/analysis_outputs.hpp"
#include "cli/input_images.hpp"

#include "cli/opened_model.hpp"
#include "vit/analysis/attention_maps.hpp"
#include "vit/analysis/rollout.hpp"
#include "vit/atomic_write.hpp"
#include "vit/error.hpp"
#include "vit/io/grid.hpp"
#include "vit/io/heatmap.hpp"
#include "vit/io/image_io.hpp"

namespace vit::cli {
namespace {

// Where the files go without --out: a folder of this name next to the checkpoint.
constexpr char kAttentionFolder[] = "attention";

namespace fs = std::filesystem;

AttentionQuery chosen_query(const AttentionOptions& o, const ModelConfig& model) {
  if (o.query) return parse_attention_query(*o.query);
  AttentionQuery query;
  // The class token's row where the head reads it, else the patch rows' mean.
  query.kind = model.pool == Pool::kCls ? AttentionQuery::Kind::kClassToken
                                        : AttentionQuery::Kind::kPatchMean;
  return query;
}

nlohmann::json query_json(const AttentionQuery& query) {
  if (query.kind == AttentionQuery::Kind::kPatch) return {query.row, query.column};
  return attention_query_name(query);
}

std::string query_text(const AttentionQuery& query) {
  switch (query.kind) {
    case AttentionQuery::Kind::kPatchMean:
      return "mean of the patch rows";
    case AttentionQuery::Kind::kPatch:
      return fmt::format("patch row {}, column {} (from 0)", query.row, query.column);
    case AttentionQuery::Kind::kClassToken:
      break;
  }
  return "class-token row";
}

std::string attention_csv(const torch::Tensor& maps) {  // (L, H, g, g)
  std::string csv = "layer,head,row,column,attention\n";
  const auto m = maps.to(torch::kDouble).contiguous();
  const auto a = m.accessor<double, 4>();
  for (int64_t l = 0; l < m.size(0); ++l)
    for (int64_t h = 0; h < m.size(1); ++h)
      for (int64_t r = 0; r < m.size(2); ++r)
        for (int64_t c = 0; c < m.size(3); ++c)
          csv += fmt::format("{},{},{},{},{:.6g}\n", l + 1, h + 1, r, c, a[l][h][r][c]);
  return csv;
}

// One overlay per layer and head, heads across, layers down; each map scaled to
// its own maximum, which its caption gives.
torch::Tensor attention_grid(const torch::Tensor& image, const torch::Tensor& maps,
                             const std::string& title) {
  std::vector<io::Tile> tiles;
  for (int64_t l = 0; l < maps.size(0); ++l)
    for (int64_t h = 0; h < maps.size(1); ++h) {
      const auto map = maps[l][h];
      const double peak = map.max().item<double>();
      io::Tile tile;
      tile.image = io::heatmap_overlay(image, peak > 0 ? map / peak : map);
      tile.caption = fmt::format("layer {} head {}\nmax {:.3f}", l + 1, h + 1, peak);
      tiles.push_back(tile);
    }
  io::GridOptions options;
  options.columns = maps.size(1);
  options.title = title;
  options.footer =
      "Each tile: one head's attention from the query to every patch, drawn over the image "
      "(blue = none, red = the tile's maximum, given under it). Layers go down, heads across.";
  return io::make_grid(tiles, options);
}

}  // namespace

nlohmann::json write_attention(OpenedModel& opened, const AttentionOptions& o) {
  LoadedModel& loaded = opened.loaded;
  const Config& config = loaded.config;
  const AttentionQuery query = chosen_query(o, config.model);
  if (o.images.size() > 1)
    throw Error(fmt::format("--images: vit attention draws one image; got {}", o.images.size()));
  const AnalysisInputs inputs =
      choose_analysis_inputs(o.images, /*samples=*/1, o.common.seed.value_or(config.seed), opened);

  torch::Tensor maps;
  int64_t predicted = 0;
  for_each_attention_batch(loaded.model, inputs.pixels, config, opened.device, /*batch_size=*/1,
                           [&](int64_t, const LogitsAndAttention& out) {
                             maps = attention_query_maps(
                                 out.attention, query,
                                 config.model.prefix_tokens())[0];  // (L,H,g,g)
                             predicted = out.logits.argmax(/*dim=*/1).item<int64_t>();
                           });
  const fs::path out = output_folder(o.model, loaded, kAttentionFolder);
  nlohmann::json layers = nlohmann::json::array();
  for (int64_t l = 0; l < maps.size(0); ++l) {
    nlohmann::json heads = nlohmann::json::array();
    for (int64_t h = 0; h < maps.size(1); ++h)
      heads.push_back(map_rows(maps[l][h]));
    layers.push_back(heads);
  }
  const int64_t label = inputs.labels.defined() ? inputs.labels[0].item<int64_t>() : -1;
  const nlohmann::json json = {
      {"layers", maps.size(0)},
      {"heads", maps.size(1)},
      {"query", query_json(query)},
      {"image", inputs.ids[0]},
      {"label", label >= 0 ? nlohmann::json(label) : nlohmann::json(nullptr)},
      {"predicted", predicted},
      {"checkpoint", loaded.path},
      {"maps", layers}};
  write_text_atomically((out / "attention.json").string(), json.dump() + "\n");
  write_text_atomically((out / "attention.csv").string(), attention_csv(maps));
  const std::string title =
      fmt::format("Attention of {}, {} (pred: {}{})", fs::path(inputs.ids[0]).filename().string(),
                  query_text(query), class_name(loaded.class_names, predicted),
                  label >= 0 ? ", true: " + class_name(loaded.class_names, label) : "");
  io::write_png(out / "attention.png", attention_grid(inputs.pixels[0], maps, title));
  spdlog::info("wrote attention.json, .csv and .png ({} layers x {} heads) to {}", maps.size(0),
               maps.size(1), out.string());
  return json;
}

std::shared_ptr<AttentionOptions> register_attention(Cli& cli) {
  auto [options, cmd] = add_command<AttentionOptions>(
      cli, "attention", "Raw attention of one image: a layers x heads grid of the query row's maps",
      on_opened_model(write_attention));
  add_model_source_options(*cmd, options->model, /*reads_data=*/true, OutFolder::kBesideCheckpoint,
                           "attention.json, .csv and .png", kAttentionFolder);
  cmd->add_option("--images", options->images,
                  "the image file to draw (any size and channel count; default: a validation "
                  "image drawn with --seed)")
      ->check(CLI::ExistingFile);
  cmd->add_option("--query", options->query,
                  "draw patch i,j's row (row, column from 0) instead of the class token's (pool "
                  "cls) or the patch rows' mean (pool mean)");
  return options;
}

}  // namespace vit::cli
