// vit lens: the logit lens (every layer read out through the final norm, the
// pooling and the head, as the last one is) and the norms of the patch tokens
// layer by layer, over validation samples or the user's images. Writes
// lens.json, lens.csv (one row per layer) and lens.png, and prints the table.
#include "analyses/cmd_lens.hpp"

#include <filesystem>
#include <iostream>

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <torch/torch.h>

#include "cli/analysis_outputs.hpp"
#include "cli/input_images.hpp"
#include "vit/analysis/logit_lens.hpp"
#include "vit/atomic_write.hpp"
#include "vit/io/image_io.hpp"
#include "vit/io/plot.hpp"

namespace vit::cli {
namespace {

constexpr char kLensFolder[] = "lens";

namespace fs = std::filesystem;

nlohmann::json norm_summary_json(const TokenNormSummary& n) {
  return {{"median", n.median}, {"p99", n.p99}, {"max", n.max}, {"high", n.high}};
}

// (L+1, n, K) as nested lists; null for a backbone without a head.
nlohmann::json logits_json(const at::Tensor& logits) {
  if (!logits.defined()) return nullptr;
  std::vector<std::vector<std::vector<double>>> out;
  const auto values = logits.to(torch::kDouble).contiguous();
  for (int64_t l = 0; l < values.size(0); ++l) {
    out.emplace_back();
    for (int64_t i = 0; i < values.size(1); ++i) {
      const auto row = values[l][i];
      out.back().emplace_back(row.data_ptr<double>(), row.data_ptr<double>() + row.numel());
    }
  }
  return out;
}

nlohmann::json list_or_null(const std::vector<double>& values) {
  return values.empty() ? nlohmann::json(nullptr) : nlohmann::json(values);
}

nlohmann::json lens_json(const LensResult& r, const Config& config, int64_t samples) {
  return {{"pool", enum_name(config.model.pool)},
          {"layers", r.norms.median.size()},
          {"samples", samples},
          {"logits", logits_json(r.logits)},
          {"accuracy", list_or_null(r.accuracy)},
          {"agreement", list_or_null(r.agreement)},
          {"token_norms", norm_summary_json(r.norms)},
          {"registers", config.model.registers},
          {"register_norms", config.model.registers > 0 ? norm_summary_json(r.register_norms)
                                                        : nlohmann::json(nullptr)}};
}

std::string lens_csv(const LensResult& r) {
  std::string csv = "layer,accuracy,agreement,norm_median,norm_p99,norm_max,high_norm_tokens\n";
  const auto cell = [](const std::vector<double>& v, size_t l) {
    return v.empty() ? std::string() : fmt::format("{:.6g}", v[l]);
  };
  for (size_t l = 0; l < r.norms.median.size(); ++l)
    csv += fmt::format("{},{},{},{:.6g},{:.6g},{:.6g},{}\n", l, cell(r.accuracy, l),
                       cell(r.agreement, l), r.norms.median[l], r.norms.p99[l], r.norms.max[l],
                       r.norms.high[l]);
  return csv;
}

at::Tensor lens_plot(const LensResult& r) {
  const auto x = layer_axis(r.norms.median.size());
  io::Panel readout = layer_panel("Read out at each layer", "fraction of images");
  readout.y_max = 1;
  if (!r.accuracy.empty())
    readout.series.push_back({"accuracy", x, r.accuracy, io::SeriesStyle::kLineAndMarkers});
  readout.series.push_back(
      {"agrees with the last layer", x, r.agreement, io::SeriesStyle::kLineAndMarkers});
  io::Panel norms = layer_panel("Patch-token L2 norms", "norm");
  norms.series.push_back({"median", x, r.norms.median, io::SeriesStyle::kLineAndMarkers});
  norms.series.push_back({"99th percentile", x, r.norms.p99, io::SeriesStyle::kLineAndMarkers});
  norms.series.push_back({"max", x, r.norms.max, io::SeriesStyle::kLineAndMarkers});
  if (!r.register_norms.median.empty()) {
    norms.title = "Patch-token and register L2 norms";
    norms.series.push_back(
        {"registers, median", x, r.register_norms.median, io::SeriesStyle::kLineAndMarkers});
    norms.series.push_back(
        {"registers, max", x, r.register_norms.max, io::SeriesStyle::kLineAndMarkers});
  }
  io::PlotOptions options;
  if (r.agreement.empty()) {  // a backbone without a head: nothing to read out
    options.title = "Token norms (a backbone: no head)";
    return io::render_plot({norms}, options);
  }
  options.title = "Logit lens: each layer through the final norm, pooling and head";
  return io::render_plot({readout, norms}, options);
}

void print_table(const LensResult& r) {
  std::cout << "layer  accuracy  agreement  norm median  norm p99  norm max  high-norm\n";
  const auto cell = [](const std::vector<double>& v, size_t l) {
    return v.empty() ? std::string("-") : fmt::format("{:.4f}", v[l]);
  };
  for (size_t l = 0; l < r.norms.median.size(); ++l)
    std::cout << fmt::format("{:>5}  {:>8}  {:>9}  {:11.3f}  {:8.3f}  {:8.3f}  {:9}\n", l,
                             cell(r.accuracy, l), cell(r.agreement, l), r.norms.median[l],
                             r.norms.p99[l], r.norms.max[l], r.norms.high[l]);
}

}  // namespace

nlohmann::json write_lens(OpenedModel& opened, const LensOptions& o) {
  LoadedModel& loaded = opened.loaded;
  if (loaded.config.model.num_classes == 0)
    spdlog::info("{} has no head (a backbone): the token norms alone, no logits", loaded.path);
  const Config& config = loaded.config;
  const AnalysisInputs inputs = choose_analysis_inputs(o.images, o.samples.value_or(kLayerSamples),
                                                       o.common.seed.value_or(config.seed), opened);
  const LensResult r = logit_lens(
      loaded.model,
      image_batches(inputs.pixels, config, opened.device, attention_batch_size(config.model)),
      inputs.labels);
  for (size_t l = 0; l < r.norms.high.size(); ++l)
    if (r.norms.high[l] > 0)
      spdlog::info("layer {}: {} patch tokens above 4x the median norm (high-norm tokens)", l,
                   r.norms.high[l]);
  for (size_t l = 0; l < r.register_norms.median.size(); ++l)
    spdlog::info("layer {}: register norms median {:.3g}, max {:.3g} (patch median {:.3g})", l,
                 r.register_norms.median[l], r.register_norms.max[l], r.norms.median[l]);

  const fs::path out = output_folder(o.model, loaded, kLensFolder);
  const nlohmann::json json = lens_json(r, config, inputs.pixels.size(0));
  write_text_atomically((out / "lens.json").string(), json.dump() + "\n");
  write_text_atomically((out / "lens.csv").string(), lens_csv(r));
  io::write_png(out / "lens.png", lens_plot(r));
  print_table(r);
  spdlog::info("wrote lens.json, .csv and .png to {}", out.string());
  return json;
}

std::shared_ptr<LensOptions> register_lens(Cli& cli) {
  auto [options, cmd] = add_command<LensOptions>(
      cli, "lens",
      "Logit lens: every layer read out by the model's head, and the patch-token norms",
      on_opened_model(write_lens));
  add_model_source_options(*cmd, options->model, /*reads_data=*/true, OutFolder::kBesideCheckpoint,
                           "lens.json, .csv (one row per layer) and .png", kLensFolder);
  add_sample_options(*cmd, options->samples, options->images, "read out",
                     std::to_string(kLayerSamples));
  return options;
}

}  // namespace vit::cli
