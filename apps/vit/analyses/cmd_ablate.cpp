// vit ablate: what each head and each branch is worth. The loss and accuracy
// of the intact model, then with each head removed (zeroed, or replaced by its
// mean), and with each block's attention or MLP branch skipped. Writes
// ablate.json, ablate.csv (one row per variant) and ablate.png (a layer x
// head heat map of the accuracy lost), and prints the table.
//
// With --images there are no true labels: each image's class is then the
// intact model's prediction, so the accuracy says how often an ablated model
// still agrees with it.
#include "analyses/cmd_ablate.hpp"

#include <filesystem>
#include <iostream>

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <torch/torch.h>

#include "cli/input_images.hpp"
#include "vit/analysis/ablation.hpp"
#include "vit/atomic_write.hpp"
#include "vit/io/image_io.hpp"
#include "vit/io/matrix_figure.hpp"

namespace vit::cli {
namespace {

constexpr char kAblateFolder[] = "ablate";

namespace fs = std::filesystem;

nlohmann::json scores_json(const LossAndAccuracy& s) {
  return {{"loss", s.loss}, {"accuracy", s.accuracy}};
}

nlohmann::json ablate_json(const AblationResult& r, int64_t samples, AblationMode mode) {
  nlohmann::json heads = nlohmann::json::array(), attention = nlohmann::json::array(),
                 mlp = nlohmann::json::array();
  for (size_t l = 0; l < r.heads.size(); ++l) {
    heads.push_back(nlohmann::json::array());
    for (const auto& h : r.heads[l])
      heads.back().push_back(scores_json(h));
    attention.push_back(scores_json(r.attention[l]));
    mlp.push_back(scores_json(r.mlp[l]));
  }
  return {{"samples", samples}, {"mode", enum_name(mode)}, {"baseline", scores_json(r.baseline)},
          {"heads", heads},     {"attention", attention},  {"mlp", mlp}};
}

// Layers and heads counted from 1, as in the picture; the baseline has neither.
std::string ablate_csv(const AblationResult& r) {
  std::string csv = "part,layer,head,loss,accuracy,accuracy_lost\n";
  const auto row = [&](const char* part, std::string layer, std::string head,
                       const LossAndAccuracy& s) {
    csv += fmt::format("{},{},{},{:.6g},{:.6g},{:.6g}\n", part, layer, head, s.loss, s.accuracy,
                       r.baseline.accuracy - s.accuracy);
  };
  row("baseline", "", "", r.baseline);
  for (size_t l = 0; l < r.heads.size(); ++l) {
    for (size_t h = 0; h < r.heads[l].size(); ++h)
      row("head", std::to_string(l + 1), std::to_string(h + 1), r.heads[l][h]);
    row("attention", std::to_string(l + 1), "", r.attention[l]);
    row("mlp", std::to_string(l + 1), "", r.mlp[l]);
  }
  return csv;
}

// Percentage points of accuracy lost with each head removed: (L, H).
at::Tensor heads_lost(const AblationResult& r) {
  auto lost = torch::zeros(
      {static_cast<int64_t>(r.heads.size()), static_cast<int64_t>(r.heads.front().size())},
      torch::kDouble);
  for (size_t l = 0; l < r.heads.size(); ++l)
    for (size_t h = 0; h < r.heads[l].size(); ++h)
      lost[static_cast<int64_t>(l)][static_cast<int64_t>(h)] =
          100 * (r.baseline.accuracy - r.heads[l][h].accuracy);
  return lost;
}

std::vector<std::string> numbered(size_t count) {
  std::vector<std::string> names;
  for (size_t i = 1; i <= count; ++i)
    names.push_back(std::to_string(i));
  return names;
}

at::Tensor ablate_plot(const AblationResult& r, AblationMode mode, int64_t samples) {
  const auto lost = heads_lost(r);
  io::MatrixFigureOptions options;
  options.title = fmt::format(
      "Accuracy lost (points) with one head {} ({} images, baseline {:.1f}%)",
      mode == AblationMode::kMean ? "mean-ablated" : "zeroed", samples, 100 * r.baseline.accuracy);
  options.row_axis = "layer";
  options.column_axis = "head";
  options.low = std::min(0.0, lost.min().item<double>());
  options.high = std::max(options.low + 1.0, lost.max().item<double>());
  options.decimals = 1;
  return io::render_matrix(lost, numbered(r.heads.size()), numbered(r.heads.front().size()),
                           options);
}

void print_table(const AblationResult& r) {
  std::cout << fmt::format("intact: loss {:.4f}, accuracy {:.4f}\n", r.baseline.loss,
                           r.baseline.accuracy);
  std::cout << "accuracy lost (points) per head, and with the whole attention or MLP skipped\n";
  std::cout << "layer";
  for (size_t h = 0; h < r.heads.front().size(); ++h)
    std::cout << fmt::format("  {:>7}", fmt::format("head {}", h + 1));
  std::cout << "  attention      mlp\n";
  const auto lost = [&](const LossAndAccuracy& s) {
    return 100 * (r.baseline.accuracy - s.accuracy);
  };
  for (size_t l = 0; l < r.heads.size(); ++l) {
    std::cout << fmt::format("{:>5}", l + 1);
    for (const auto& h : r.heads[l])
      std::cout << fmt::format("  {:7.2f}", lost(h));
    std::cout << fmt::format("  {:9.2f}  {:7.2f}\n", lost(r.attention[l]), lost(r.mlp[l]));
  }
}

}  // namespace

nlohmann::json write_ablate(OpenedModel& opened, const AblateOptions& o) {
  const AblationMode mode = o.mode;
  LoadedModel& loaded = opened.loaded;
  require_head(loaded, "ablate");
  const Config& config = loaded.config;
  const AnalysisInputs inputs = choose_analysis_inputs(o.images, o.samples.value_or(kLayerSamples),
                                                       o.common.seed.value_or(config.seed), opened);
  if (!inputs.labels.defined())
    spdlog::info("--images have no labels: each image's class is the intact model's prediction");
  const AblationResult r = ablate(
      loaded.model,
      image_batches(inputs.pixels, config, opened.device, attention_batch_size(config.model)),
      inputs.labels, mode);

  const int64_t samples = inputs.pixels.size(0);
  const fs::path out = output_folder(o.model, loaded, kAblateFolder);
  const nlohmann::json json = ablate_json(r, samples, mode);
  write_text_atomically((out / "ablate.json").string(), json.dump(2) + "\n");
  write_text_atomically((out / "ablate.csv").string(), ablate_csv(r));
  io::write_png(out / "ablate.png", ablate_plot(r, mode, samples));
  print_table(r);
  spdlog::info("wrote ablate.json, .csv and .png to {}", out.string());
  return json;
}

std::shared_ptr<AblateOptions> register_ablate(Cli& cli) {
  auto [options, cmd] = add_command<AblateOptions>(
      cli, "ablate",
      "Loss and accuracy with each head removed, and each attention or MLP branch skipped",
      on_opened_model(write_ablate));
  add_model_source_options(*cmd, options->model, /*reads_data=*/true, OutFolder::kBesideCheckpoint,
                           "ablate.json, .csv (one row per variant) and .png", kAblateFolder);
  add_sample_options(*cmd, options->samples, options->images, "score",
                     std::to_string(kLayerSamples));
  add_enum_option(*cmd, "--mode", options->mode,
                  "what replaces a removed head's output: zero (the default), or its mean over "
                  "the images");
  return options;
}

}  // namespace vit::cli
