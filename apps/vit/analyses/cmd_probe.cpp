// vit probe: a linear probe per layer. The pooled representation of each
// layer (what the head would read from it) of --train-samples training images
// trains a multinomial logistic regression; its accuracy on --samples
// validation images says how much of the class that layer already holds in a
// linearly readable form. Writes probe.json, probe.csv and probe.png.
#include "analyses/cmd_probe.hpp"

#include <filesystem>
#include <iostream>

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <torch/torch.h>

#include "cli/analysis_outputs.hpp"
#include "cli/input_images.hpp"
#include "vit/analysis/linear_probe.hpp"
#include "vit/atomic_write.hpp"
#include "vit/error.hpp"
#include "vit/io/image_io.hpp"
#include "vit/io/plot.hpp"

namespace vit::cli {
namespace {

constexpr char kProbeFolder[] = "probe";

namespace fs = std::filesystem;

struct ProbeScores {
  std::vector<double> train, val;
  double model_val = 0;
};

std::string probe_csv(const ProbeScores& s) {
  std::string csv = "layer,train_accuracy,val_accuracy\n";
  for (size_t l = 0; l < s.val.size(); ++l)
    csv += fmt::format("{},{:.6g},{:.6g}\n", l, s.train[l], s.val[l]);
  return csv;
}

at::Tensor probe_plot(const ProbeScores& s, int64_t train_samples, int64_t samples) {
  const auto x = layer_axis(s.val.size());
  io::Panel panel = layer_panel(
      fmt::format("Linear probes ({} training, {} validation images)", train_samples, samples),
      "accuracy");
  panel.y_max = 1;
  panel.series.push_back({"probe, training images", x, s.train, io::SeriesStyle::kLineAndMarkers});
  panel.series.push_back({"probe, validation images", x, s.val, io::SeriesStyle::kLineAndMarkers});
  panel.series.push_back({fmt::format("the model itself ({:.1f}%)", 100 * s.model_val),
                          {x.front(), x.back()},
                          {s.model_val, s.model_val},
                          io::SeriesStyle::kLine,
                          /*color=*/7});
  io::PlotOptions options;
  options.panel_width = 700;
  return io::render_plot({panel}, options);
}

}  // namespace

nlohmann::json write_probe(OpenedModel& opened, const ProbeOptions& o) {
  if (!(o.l2 >= 0)) throw Error(fmt::format("--l2 {}: expected a penalty >= 0", o.l2));
  LoadedModel& loaded = opened.loaded;
  require_head(loaded, "probe");
  const Config& config = loaded.config;
  const uint64_t seed = o.common.seed.value_or(config.seed);
  const AnalysisInputs val =
      choose_analysis_inputs({}, o.samples.value_or(kLayerSamples), seed, opened);
  const auto [train_pixels, train_labels] =
      choose_training_images(opened, o.train_samples, seed, "--train-samples", /*minimum=*/2);
  const int64_t batch = attention_batch_size(config.model);
  const auto train_features =
      pooled_layers(loaded.model, image_batches(train_pixels, config, opened.device, batch));
  const auto val_batches = image_batches(val.pixels, config, opened.device, batch);
  const auto val_features = pooled_layers(loaded.model, val_batches);

  ProbeScores scores;
  for (size_t l = 0; l < val_features.size(); ++l) {
    const LinearProbe probe =
        fit_linear_probe(train_features[l], train_labels, config.model.num_classes, o.l2);
    scores.train.push_back(top1_accuracy(probe_logits(probe, train_features[l]), train_labels));
    scores.val.push_back(top1_accuracy(probe_logits(probe, val_features[l]), val.labels));
  }
  {
    torch::NoGradGuard no_grad;
    std::vector<at::Tensor> logits;
    val_batches.for_each([&](int64_t, const at::Tensor& inputs) {
      logits.push_back(loaded.model->forward(inputs).cpu());
    });
    scores.model_val = top1_accuracy(torch::cat(logits), val.labels);
  }

  const fs::path out = output_folder(o.model, loaded, kProbeFolder);
  const nlohmann::json json = {
      {"layers", scores.val.size()},   {"train_samples", train_labels.size(0)},
      {"samples", val.labels.size(0)}, {"train_accuracy", scores.train},
      {"val_accuracy", scores.val},    {"model_val_accuracy", scores.model_val}};
  write_text_atomically((out / "probe.json").string(), json.dump(2) + "\n");
  write_text_atomically((out / "probe.csv").string(), probe_csv(scores));
  io::write_png(out / "probe.png", probe_plot(scores, train_labels.size(0), val.labels.size(0)));
  std::cout << "layer  probe train  probe val\n";
  for (size_t l = 0; l < scores.val.size(); ++l)
    std::cout << fmt::format("{:>5}  {:11.4f}  {:9.4f}\n", l, scores.train[l], scores.val[l]);
  std::cout << fmt::format("the model itself: {:.4f} on the same validation images\n",
                           scores.model_val);
  spdlog::info("wrote probe.json, .csv and .png to {}", out.string());
  return json;
}

std::shared_ptr<ProbeOptions> register_probe(Cli& cli) {
  auto [options, cmd] = add_command<ProbeOptions>(
      cli, "probe", "A linear probe on every layer: where the class becomes linearly readable",
      on_opened_model(write_probe));
  add_model_source_options(*cmd, options->model, /*reads_data=*/true, OutFolder::kBesideCheckpoint,
                           "probe.json, .csv (one row per layer) and .png", kProbeFolder);
  cmd->add_option("--samples", options->samples,
                  "validation images the probes are scored on, drawn with --seed (default " +
                      std::to_string(kLayerSamples) + ")")
      ->check(at_least_one());
  cmd->add_option("--train-samples", options->train_samples,
                  "training images the probes learn from (no augmentation), drawn with --seed")
      ->check(at_least_one())
      ->capture_default_str();
  cmd->add_option("--l2", options->l2,
                  "L2 penalty l2 * ||W||^2 of the logistic regression (the bias is not penalised)")
      ->capture_default_str();
  return options;
}

}  // namespace vit::cli
