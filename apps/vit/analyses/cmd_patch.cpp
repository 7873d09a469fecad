// vit patch: which activations cause a prediction. Pairs of a clean and a
// corrupt image (--clean/--corrupt, or --pairs drawn from the validation
// split with different labels); every residual-stream position and every
// head's output copied from the clean run into the corrupt one
// (analysis/activation_patching), or estimated from one backward pass
// (--method attribution), or both with their correlation. Writes patch.json,
// patch.csv (one row per position or head) and patch.png (each layer's effect
// over the first pair's clean image, and a layer x head map).
#include "analyses/cmd_patch.hpp"

#include <filesystem>
#include <iostream>

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <torch/torch.h>

#include "cli/input_images.hpp"
#include "vit/atomic_write.hpp"
#include "vit/error.hpp"
#include "vit/io/grid.hpp"
#include "vit/io/heatmap.hpp"
#include "vit/io/image_io.hpp"
#include "vit/io/matrix_figure.hpp"

namespace vit::cli {
namespace {

constexpr char kPatchFolder[] = "patch";
// Validation images drawn per pair wanted: enough to find pairs of different labels.
constexpr int64_t kDrawnPerPair = 3;

namespace fs = std::filesystem;

struct PatchPairs {
  at::Tensor clean_pixels, corrupt_pixels;  // uint8 (n, C, S, S) on the CPU
  at::Tensor clean_labels, corrupt_labels;  // int64 (n)
  std::vector<std::string> clean_ids, corrupt_ids;
};

// Clean image i with the first later unused image of another label.
PatchPairs validation_pairs(const PatchOptions& o, OpenedModel& opened) {
  const Config& config = opened.loaded.config;
  const AnalysisInputs drawn = choose_analysis_inputs({}, kDrawnPerPair * o.pairs,
                                                      o.common.seed.value_or(config.seed), opened);
  const int64_t count = drawn.pixels.size(0);
  std::vector<bool> used(static_cast<size_t>(count), false);
  std::vector<int64_t> clean, corrupt;
  for (int64_t i = 0; i < count && static_cast<int64_t>(clean.size()) < o.pairs; ++i) {
    if (used[static_cast<size_t>(i)]) continue;
    for (int64_t j = i + 1; j < count; ++j) {
      if (used[static_cast<size_t>(j)] ||
          drawn.labels[j].item<int64_t>() == drawn.labels[i].item<int64_t>())
        continue;
      used[static_cast<size_t>(i)] = used[static_cast<size_t>(j)] = true;
      clean.push_back(i);
      corrupt.push_back(j);
      break;
    }
  }
  if (clean.empty())
    throw Error("vit patch: no two validation images of different labels among the " +
                std::to_string(count) + " drawn");
  if (static_cast<int64_t>(clean.size()) < o.pairs)
    spdlog::warn("vit patch: {} pairs of different labels, fewer than the {} asked for",
                 clean.size(), o.pairs);
  const auto index = [](const std::vector<int64_t>& v) { return torch::tensor(v, torch::kLong); };
  PatchPairs pairs;
  pairs.clean_pixels = drawn.pixels.index_select(0, index(clean));
  pairs.corrupt_pixels = drawn.pixels.index_select(0, index(corrupt));
  pairs.clean_labels = drawn.labels.index_select(0, index(clean));
  pairs.corrupt_labels = drawn.labels.index_select(0, index(corrupt));
  for (size_t p = 0; p < clean.size(); ++p) {
    pairs.clean_ids.push_back(drawn.ids[static_cast<size_t>(clean[p])]);
    pairs.corrupt_ids.push_back(drawn.ids[static_cast<size_t>(corrupt[p])]);
  }
  return pairs;
}

// --clean and --corrupt, labelled with the model's own predictions.
PatchPairs image_pair(const PatchOptions& o, OpenedModel& opened) {
  const ImageInputs inputs =
      load_image_inputs({*o.clean, *o.corrupt}, opened.loaded.config, opened.device);
  at::Tensor predicted;
  {
    torch::NoGradGuard no_grad;
    predicted = opened.loaded.model->forward(inputs.normalized).argmax(1).cpu();
  }
  const auto& names = opened.loaded.class_names;
  const auto name = [&](int64_t c) { return names[static_cast<size_t>(c)]; };
  if (predicted[0].item<int64_t>() == predicted[1].item<int64_t>())
    throw Error("vit patch: the model predicts '" + name(predicted[0].item<int64_t>()) +
                "' for both --clean and --corrupt; patching needs two different predictions");
  PatchPairs pairs;
  pairs.clean_pixels = inputs.pixels.narrow(0, 0, 1);
  pairs.corrupt_pixels = inputs.pixels.narrow(0, 1, 1);
  pairs.clean_labels = predicted.narrow(0, 0, 1);
  pairs.corrupt_labels = predicted.narrow(0, 1, 1);
  pairs.clean_ids = {*o.clean};
  pairs.corrupt_ids = {*o.corrupt};
  return pairs;
}

nlohmann::json rows_or_null(const at::Tensor& t) {
  if (!t.defined()) return nullptr;
  nlohmann::json rows = nlohmann::json::array();
  const auto values = t.to(torch::kDouble).contiguous();
  for (int64_t r = 0; r < values.size(0); ++r)
    rows.push_back(std::vector<double>(values[r].data_ptr<double>(),
                                       values[r].data_ptr<double>() + values.size(1)));
  return rows;
}

std::optional<double> correlation_of(const PatchingResult& r) {
  if (!r.residual.defined() || !r.attribution_residual.defined()) return std::nullopt;
  return pearson_correlation(
      torch::cat({r.residual.flatten(), r.heads.flatten()}),
      torch::cat({r.attribution_residual.flatten(), r.attribution_heads.flatten()}));
}

nlohmann::json patch_json(const PatchingResult& r, PatchMethod method) {
  const auto correlation = correlation_of(r);
  return {{"pairs", r.pairs},
          {"mode", enum_name(method)},
          {"residual", rows_or_null(r.residual)},
          {"heads", rows_or_null(r.heads)},
          {"attribution",
           {{"residual", rows_or_null(r.attribution_residual)},
            {"heads", rows_or_null(r.attribution_heads)}}},
          {"correlation", correlation ? nlohmann::json(*correlation) : nlohmann::json(nullptr)}};
}

// "cls", "dist", "reg1".."regR" (the prefix tokens the model has), then the
// patches "r,c" (row, column from 0).
std::string token_name(int64_t t, const ModelConfig& m) {
  const int64_t before_registers = m.prefix_tokens() - m.registers;
  if (m.class_token && t == 0) return "cls";
  if (m.distilled && t == int64_t{m.class_token}) return "dist";
  if (t < m.prefix_tokens()) return "reg" + std::to_string(t - before_registers + 1);
  const int64_t p = t - m.prefix_tokens();
  return std::to_string(p / m.grid()) + "," + std::to_string(p % m.grid());
}

// Residual rows by layer (0 the embeddings, l after block l) and token; head
// rows by block and head, both counted from 1 as in the picture (and in
// `vit ablate`); patch.json's arrays count from 0.
std::string patch_csv(const PatchingResult& r, const ModelConfig& m) {
  std::string csv = "part,layer,index,name,activation,attribution\n";
  const auto value = [](const at::Tensor& t, int64_t a, int64_t b) {
    return t.defined() ? fmt::format("{:.6g}", t[a][b].item<double>()) : std::string();
  };
  const auto& shape = r.residual.defined() ? r.residual : r.attribution_residual;
  for (int64_t l = 0; l < shape.size(0); ++l)
    for (int64_t t = 0; t < shape.size(1); ++t)
      csv += fmt::format("residual,{},{},\"{}\",{},{}\n", l, t, token_name(t, m),
                         value(r.residual, l, t), value(r.attribution_residual, l, t));
  const auto& heads = r.heads.defined() ? r.heads : r.attribution_heads;
  for (int64_t l = 0; l < heads.size(0); ++l)
    for (int64_t h = 0; h < heads.size(1); ++h)
      csv += fmt::format("head,{},{},\"block {} head {}\",{},{}\n", l + 1, h + 1, l + 1, h + 1,
                         value(r.heads, l, h), value(r.attribution_heads, l, h));
  return csv;
}

// White padding to `width` on the right: uint8 (3, H, W) -> (3, H, width).
at::Tensor padded_to(const at::Tensor& image, int64_t width) {
  if (image.size(2) >= width) return image;
  return torch::cat(
      {image, torch::full({3, image.size(1), width - image.size(2)}, 255, torch::kUInt8)},
      /*dim=*/2);
}

// Each layer's patch-token effects over the first clean image, on one colour
// scale from 0 to the largest patch effect of any layer (so that layers
// compare), captioned with the class token's and the registers' effects;
// under it the layer x head map.
at::Tensor patch_plot(const PatchingResult& r, const PatchPairs& pairs, const ModelConfig& m,
                      PatchMethod method) {
  const bool real = r.residual.defined();
  const auto& residual = real ? r.residual : r.attribution_residual;
  const auto& heads = real ? r.heads : r.attribution_heads;
  const std::string what = real ? "activation patching" : "attribution patching";
  const double peak = std::max(residual.slice(1, m.prefix_tokens()).max().item<double>(), 1e-9);
  std::vector<io::Tile> tiles;
  for (int64_t l = 0; l < residual.size(0); ++l) {
    const auto patches = residual[l].slice(0, m.prefix_tokens()).view({m.grid(), m.grid()}) / peak;
    std::string caption = fmt::format("layer {}", l);
    if (m.class_token) caption += fmt::format(": cls {:.2f}", residual[l][0].item<double>());
    if (m.registers > 0)
      caption += fmt::format("{} registers up to {:.2f}", m.class_token ? "," : ":",
                             residual[l]
                                 .slice(0, m.prefix_tokens() - m.registers, m.prefix_tokens())
                                 .max()
                                 .item<double>());
    tiles.push_back(
        {io::heatmap_overlay(pairs.clean_pixels[0], patches.clamp(0, 1).to(torch::kFloat)),
         caption});
  }
  io::GridOptions grid;
  grid.columns = std::min<int64_t>(residual.size(0), 5);
  grid.min_tile_side = 160;
  grid.title =
      fmt::format("{}: the residual stream, each position patched alone ({} pairs)", what, r.pairs);
  grid.footer = fmt::format(
      "Each patch's share of the clean logit difference restored (0 = the corrupt run, 1 = the "
      "clean one), over pair 1's clean image: blue 0 to red {:.3f}, the largest; layer 0 is the "
      "embeddings, layer l the stream after block l.{}",
      peak,
      method == PatchMethod::kBoth ? " Attribution patching is in patch.json and patch.csv." : "");
  const auto top = io::make_grid(tiles, grid);
  io::MatrixFigureOptions options;
  options.title = fmt::format("{}: each head's output patched alone", what);
  options.row_axis = "block";
  options.column_axis = "head";
  options.low = std::min(0.0, heads.min().item<double>());
  options.high = std::max(1.0, heads.max().item<double>());
  std::vector<std::string> rows, columns;
  for (int64_t l = 0; l < heads.size(0); ++l)
    rows.push_back(std::to_string(l + 1));
  for (int64_t h = 0; h < heads.size(1); ++h)
    columns.push_back(std::to_string(h + 1));
  const auto bottom = io::render_matrix(heads, rows, columns, options);
  const int64_t width = std::max(top.size(2), bottom.size(2));
  return torch::cat({padded_to(top, width), padded_to(bottom, width)}, /*dim=*/1);
}

void print_top(const PatchingResult& r, const ModelConfig& m) {
  const auto& residual = r.residual.defined() ? r.residual : r.attribution_residual;
  const auto flat = residual.flatten();
  const auto top = flat.topk(std::min<int64_t>(5, flat.numel()));
  std::cout << "largest effects (share of the clean logit difference restored):\n";
  for (int64_t i = 0; i < std::get<1>(top).size(0); ++i) {
    const int64_t index = std::get<1>(top)[i].item<int64_t>();
    std::cout << fmt::format("  layer {} token {:>6}  {:7.3f}\n", index / residual.size(1),
                             token_name(index % residual.size(1), m),
                             std::get<0>(top)[i].item<double>());
  }
  if (const auto c = correlation_of(r))
    std::cout << fmt::format("activation vs attribution patching: correlation {:.3f}\n", *c);
}

}  // namespace

nlohmann::json write_patch(OpenedModel& opened, const PatchOptions& o) {
  LoadedModel& loaded = opened.loaded;
  require_head(loaded, "patch");
  const Config& config = loaded.config;
  const PatchPairs pairs = o.clean ? image_pair(o, opened) : validation_pairs(o, opened);
  const PatchingResult r =
      activation_patching(loaded.model, normalize_pixels(pairs.clean_pixels, config, opened.device),
                          normalize_pixels(pairs.corrupt_pixels, config, opened.device),
                          pairs.clean_labels, pairs.corrupt_labels, o.method);

  const fs::path out = output_folder(o.model, loaded, kPatchFolder);
  const nlohmann::json json = patch_json(r, o.method);
  write_text_atomically((out / "patch.json").string(), json.dump() + "\n");
  write_text_atomically((out / "patch.csv").string(), patch_csv(r, config.model));
  io::write_png(out / "patch.png", patch_plot(r, pairs, config.model, o.method));
  print_top(r, config.model);
  spdlog::info("wrote patch.json, .csv and .png ({} pairs, {}) to {}", r.pairs, enum_name(o.method),
               out.string());
  return json;
}

std::shared_ptr<PatchOptions> register_patch(Cli& cli) {
  auto [options, cmd] = add_command<PatchOptions>(
      cli, "patch",
      "Activation patching: which residual positions and heads move a prediction from a clean "
      "image into a corrupt one",
      on_opened_model(write_patch));
  add_model_source_options(*cmd, options->model, /*reads_data=*/true, OutFolder::kBesideCheckpoint,
                           "patch.json, .csv and .png", kPatchFolder);
  auto* clean = cmd->add_option("--clean", options->clean,
                                "the clean image (its label: the model's prediction)")
                    ->check(CLI::ExistingFile);
  auto* corrupt = cmd->add_option("--corrupt", options->corrupt,
                                  "the corrupt image, predicted as another class")
                      ->check(CLI::ExistingFile);
  clean->needs(corrupt);
  corrupt->needs(clean);
  cmd->add_option("--pairs", options->pairs,
                  "pairs of validation images of different labels, drawn with --seed")
      ->check(at_least_one())
      ->excludes(clean)
      ->default_val(16);
  add_enum_option(*cmd, "--method", options->method,
                  "activation (real patching, the default), attribution (one backward pass), or "
                  "both, with their correlation");
  return options;
}

}  // namespace vit::cli
