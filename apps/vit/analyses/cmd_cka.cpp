// vit cka: linear CKA (Kornblith et al., 2019) between every pair of layers
// of one model, or with --against between the layers of two checkpoints of
// the same architecture (an early snapshot and the best one, or two seeds),
// on the same images. Writes cka.json, cka.csv (the matrix) and cka.png.
#include "analyses/cmd_cka.hpp"

#include <filesystem>
#include <iostream>

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <torch/torch.h>

#include "cli/input_images.hpp"
#include "cli/opened_model.hpp"
#include "vit/analysis/cka.hpp"
#include "vit/atomic_write.hpp"
#include "vit/error.hpp"
#include "vit/io/image_io.hpp"
#include "vit/io/matrix_figure.hpp"

namespace vit::cli {
namespace {

constexpr char kCkaFolder[] = "cka";

namespace fs = std::filesystem;

std::vector<std::vector<double>> matrix_rows(const at::Tensor& matrix) {
  std::vector<std::vector<double>> rows;
  for (int64_t i = 0; i < matrix.size(0); ++i) {
    rows.emplace_back();
    for (int64_t j = 0; j < matrix.size(1); ++j)
      rows.back().push_back(matrix[i][j].item<double>());
  }
  return rows;
}

std::string cka_csv(const std::vector<std::vector<double>>& rows) {
  std::string csv = "layer";
  for (size_t j = 0; j < rows.front().size(); ++j)
    csv += fmt::format(",{}", j);
  csv += "\n";
  for (size_t i = 0; i < rows.size(); ++i) {
    csv += std::to_string(i);
    for (const double v : rows[i])
      csv += fmt::format(",{:.6g}", v);
    csv += "\n";
  }
  return csv;
}

std::vector<std::string> layer_names(int64_t count) {
  std::vector<std::string> names;
  for (int64_t l = 0; l < count; ++l)
    names.push_back(std::to_string(l));
  return names;
}

at::Tensor cka_plot(const at::Tensor& matrix, int64_t samples, bool against) {
  io::MatrixFigureOptions options;
  options.title = fmt::format("Linear CKA between layers ({} images{})", samples,
                              against ? ", rows: --checkpoint, columns: --against" : "");
  options.row_axis = against ? "layer of --checkpoint (0 = embeddings)" : "layer (0 = embeddings)";
  options.column_axis = against ? "layer of --against" : "layer";
  return io::render_matrix(matrix, layer_names(matrix.size(0)), layer_names(matrix.size(1)),
                           options);
}

}  // namespace

void check_same_architecture(const LoadedModel& a, const LoadedModel& b) {
  // The head is never read, so the number of classes may differ (a fine-tuned copy).
  ModelConfig b_with_a_head = b.config.model;
  b_with_a_head.num_classes = a.config.model.num_classes;
  const auto differences = architecture_differences(a.config.model, b_with_a_head);
  if (!differences.empty())
    throw Error(
        fmt::format("--against {}: another architecture than {} ({}); vit cka compares "
                    "checkpoints of one architecture",
                    b.path, a.path, differences.front()));
}

std::vector<at::Tensor> layer_grams_of(LoadedModel& loaded, const at::Tensor& pixels,
                                       c10::Device device) {
  return layer_grams(loaded.model, image_batches(pixels, loaded.config, device,
                                                 attention_batch_size(loaded.config.model)));
}

nlohmann::json write_cka(OpenedModel& opened, const CkaOptions& o) {
  LoadedModel& loaded = opened.loaded;
  const Config& config = loaded.config;
  std::optional<LoadedModel> other;
  if (o.against) {
    other = open_checkpoint(o.against, o.model.config, opened.device);
    check_same_architecture(loaded, *other);
  }
  const AnalysisInputs inputs = choose_analysis_inputs(o.images, o.samples.value_or(kCkaSamples),
                                                       o.common.seed.value_or(config.seed), opened);
  if (inputs.pixels.size(0) < 2)
    throw Error("vit cka needs at least 2 images, got " + std::to_string(inputs.pixels.size(0)));
  const auto grams_a = layer_grams_of(loaded, inputs.pixels, opened.device);
  const auto matrix =
      other ? cka_matrix(grams_a, layer_grams_of(*other, inputs.pixels, opened.device))
            : cka_matrix(grams_a, grams_a);
  const auto rows = matrix_rows(matrix);

  const fs::path out = output_folder(o.model, loaded, kCkaFolder);
  const nlohmann::json json = {{"samples", inputs.pixels.size(0)},
                               {"a", loaded.path},
                               {"b", other ? other->path : loaded.path},
                               {"matrix", rows}};
  write_text_atomically((out / "cka.json").string(), json.dump(2) + "\n");
  write_text_atomically((out / "cka.csv").string(), cka_csv(rows));
  io::write_png(out / "cka.png", cka_plot(matrix, inputs.pixels.size(0), other.has_value()));
  std::cout << cka_csv(rows);
  spdlog::info("wrote cka.json, .csv and .png to {}", out.string());
  return json;
}

std::shared_ptr<CkaOptions> register_cka(Cli& cli) {
  auto [options, cmd] = add_command<CkaOptions>(
      cli, "cka", "Linear CKA between every pair of layers, of one model or of two checkpoints",
      on_opened_model(write_cka));
  add_model_source_options(*cmd, options->model, /*reads_data=*/true, OutFolder::kBesideCheckpoint,
                           "cka.json, .csv (the matrix) and .png", kCkaFolder);
  add_sample_options(*cmd, options->samples, options->images, "compare on",
                     std::to_string(kCkaSamples));
  cmd->add_option("--against", options->against,
                  "a second checkpoint of the same architecture: its layers are the columns")
      ->check(checkpoint_source());
  return options;
}

}  // namespace vit::cli
