// vit pos-embed: the cosine similarity of every patch's position embedding
// with every other patch's (ViT paper, Fig. 7 centre), optionally after
// resizing the embedding to another grid as `vit train --init` would.
// Writes pos_embed.json ({"grid": g, "similarity": [[g*g x g*g]]}, patch
// tokens only, row-major patches) and pos_embed.png.
#include "analyses/cmd_pos_embed.hpp"

#include <cmath>
#include <filesystem>

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <torch/torch.h>
#include <nlohmann/json.hpp>

#include "cli/opened_model.hpp"
#include "vit/analysis/pos_embed_similarity.hpp"
#include "vit/atomic_write.hpp"
#include "vit/io/image_io.hpp"
#include "vit/io/pos_embed_figure.hpp"
#include "vit/weights/pos_embed_resize.hpp"

namespace vit::cli {
namespace {

// Where the files go without --out: a folder of this name next to the checkpoint.
constexpr char kPosEmbedFolder[] = "pos-embed";

namespace fs = std::filesystem;

// Six decimals: far below what a cosine in a picture means, and a readable file.
std::vector<std::vector<double>> similarity_rows(const torch::Tensor& similarity) {
  const auto values = similarity.to(torch::kDouble).contiguous();
  const double* v = values.data_ptr<double>();
  const int64_t n = values.size(0);
  std::vector<std::vector<double>> rows(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j)
      rows[i].push_back(std::round(v[i * n + j] * 1e6) / 1e6);
  return rows;
}

std::string caption(int64_t grid, int64_t source_grid) {
  const std::string tiles = fmt::format(
      "Tile (r, c): cosine similarity of patch (r, c)'s position embedding with every patch's "
      "(class token left out).");
  if (grid == source_grid) return tiles;
  return tiles + fmt::format(
                     " Resized from the model's {0}x{0} grid to {1}x{1} by 2-D bicubic "
                     "interpolation, as vit train --init does for another image size.",
                     source_grid, grid);
}

}  // namespace

nlohmann::json write_pos_embed(OpenedModel& opened, const PosEmbedOptions& o) {
  LoadedModel& loaded = opened.loaded;
  torch::Tensor pos_embed = loaded.model->pos_embed.detach();         // (1, F + g*g, D)
  const int64_t prefix_rows = loaded.config.model.embedded_prefix();  // F: 1, or 0 with registers
  const int64_t source_grid = pos_embed_grid(pos_embed, prefix_rows);
  if (o.interpolate) pos_embed = resize_pos_embed(pos_embed, *o.interpolate, prefix_rows);
  const int64_t grid = pos_embed_grid(pos_embed, prefix_rows);
  const torch::Tensor similarity = pos_embed_similarity(pos_embed, prefix_rows);  // (g*g, g*g)

  const fs::path out = output_folder(o.model, loaded, kPosEmbedFolder);
  nlohmann::json json = {{"grid", grid}, {"checkpoint", loaded.path}};
  if (o.interpolate) json["interpolated_from"] = source_grid;
  json["similarity"] = similarity_rows(similarity);
  write_text_atomically((out / "pos_embed.json").string(), json.dump() + "\n");
  io::PosEmbedFigureOptions figure;
  figure.title = fmt::format("Position embedding similarity, {0}x{0} grid of {1}", grid,
                             fs::path(loaded.path).filename().string());
  figure.caption = caption(grid, source_grid);
  io::write_png(out / "pos_embed.png", io::render_pos_embed_similarity(similarity, figure));
  spdlog::info("wrote pos_embed.json and pos_embed.png ({}x{} grid{}) to {}", grid, grid,
               o.interpolate ? fmt::format(", resized from {}x{}", source_grid, source_grid) : "",
               out.string());
  return json;
}

std::shared_ptr<PosEmbedOptions> register_pos_embed(Cli& cli) {
  auto [options, cmd] = add_command<PosEmbedOptions>(
      cli, "pos-embed", "Cosine similarity of the position embeddings (ViT paper, Fig. 7 centre)",
      on_opened_model(write_pos_embed));
  add_model_source_options(*cmd, options->model, /*reads_data=*/false, OutFolder::kBesideCheckpoint,
                           "pos_embed.json and pos_embed.png", kPosEmbedFolder);
  cmd->add_option("--interpolate", options->interpolate,
                  "resize the embedding to an S x S patch grid first (2-D bicubic, as vit train "
                  "--init does for another image size)")
      ->check(CLI::Range(int64_t{1}, int64_t{256}));
  return options;
}

}  // namespace vit::cli
