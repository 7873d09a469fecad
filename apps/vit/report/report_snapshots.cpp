#include "report/report_snapshots.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "analyses/cmd_cka.hpp"
#include "cli/analysis_outputs.hpp"
#include "cli/input_images.hpp"
#include "cli/opened_model.hpp"
#include "vit/analysis/cka.hpp"
#include "vit/analysis/logit_lens.hpp"
#include "vit/atomic_write.hpp"
#include "vit/io/image_io.hpp"
#include "vit/io/plot.hpp"

namespace vit::cli {
namespace {

// One line per layer against the epoch, layers coloured in order.
io::Panel layers_over_epochs(const std::string& title, const std::string& y_label,
                             const std::vector<int64_t>& epochs,
                             const std::vector<std::vector<double>>& values) {
  io::Panel panel = counting_panel(title, "epoch", y_label);
  panel.y_max = 1;
  double lowest = 1;
  for (const auto& row : values)
    for (const double v : row)
      lowest = std::min(lowest, v);
  // From 0 unless every value sits high (CKA near 1): then from the tenth below the lowest.
  panel.y_min = lowest > 0.5 ? std::floor(lowest * 10) / 10 : 0.0;
  std::vector<double> x(epochs.begin(), epochs.end());
  const size_t layers = values.front().size();
  for (size_t l = 0; l < layers; ++l) {
    std::vector<double> y;
    for (const auto& row : values)
      y.push_back(row[l]);
    panel.series.push_back({l == 0 ? "layer 0 (embeddings)" : fmt::format("layer {}", l), x, y,
                            io::SeriesStyle::kLineAndMarkers});
  }
  return panel;
}

}  // namespace

nlohmann::json write_snapshot_analysis(OpenedModel& best, const std::vector<Snapshot>& snapshots,
                                       const std::filesystem::path& out, int64_t samples,
                                       uint64_t seed) {
  const AnalysisInputs inputs = choose_analysis_inputs({}, samples, seed, best);
  const auto best_grams = layer_grams_of(best.loaded, inputs.pixels, best.device);
  std::vector<int64_t> epochs;
  std::vector<std::vector<double>> lens, cka;
  for (const Snapshot& snapshot : snapshots) {
    LoadedModel loaded = open_checkpoint(snapshot.path, {}, best.device);
    check_same_architecture(best.loaded, loaded);
    const LensResult r = logit_lens(loaded.model,
                                    image_batches(inputs.pixels, loaded.config, best.device,
                                                  attention_batch_size(loaded.config.model)),
                                    inputs.labels);
    epochs.push_back(snapshot.epoch);
    lens.push_back(r.accuracy);
    const auto grams = layer_grams_of(loaded, inputs.pixels, best.device);
    cka.emplace_back();
    for (size_t l = 0; l < grams.size(); ++l)
      cka.back().push_back(linear_cka(best_grams[l], grams[l]));
  }
  const nlohmann::json json = {{"epochs", epochs}, {"lens_accuracy", lens}, {"cka_with_best", cka}};
  write_text_atomically((out / "snapshots.json").string(), json.dump(2) + "\n");
  io::PlotOptions options;
  options.title = fmt::format("Across training: {} snapshots, {} validation images",
                              snapshots.size(), inputs.pixels.size(0));
  io::write_png(out / "snapshots.png",
                io::render_plot(
                    {layers_over_epochs("Logit-lens accuracy", "accuracy", epochs, lens),
                     layers_over_epochs("CKA with best.pt, same layer", "linear CKA", epochs, cka)},
                    options));
  spdlog::info("wrote snapshots.json and .png to {}", out.string());
  return json;
}

}  // namespace vit::cli
