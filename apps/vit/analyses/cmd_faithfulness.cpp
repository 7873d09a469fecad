// vit faithfulness: which saliency map the model actually uses, by the
// deletion and insertion test (Petsiuk et al., 2018) of rollout, grad,
// grad-x-input, grad-rollout, integrated-gradients and smoothgrad (with
// `vit saliency`'s defaults) and a seeded random order. Writes
// faithfulness.json, faithfulness.csv (one row per method) and
// faithfulness.png (both mean curves per method, the AUCs in the legend).
#include "analyses/cmd_faithfulness.hpp"

#include <filesystem>
#include <iostream>
#include <map>

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <torch/torch.h>

#include "cli/analysis_outputs.hpp"
#include "cli/input_images.hpp"
#include "vit/analysis/faithfulness.hpp"
#include "vit/atomic_write.hpp"
#include "vit/error.hpp"
#include "vit/io/image_io.hpp"
#include "vit/io/plot.hpp"

namespace vit::cli {
namespace {

constexpr char kFaithfulnessFolder[] = "faithfulness";

namespace fs = std::filesystem;

struct MethodCurves {
  at::Tensor deletion_sum, insertion_sum;   // float64 (T+1), summed over the images
  std::vector<double> deletion, insertion;  // the means
  double deletion_auc = 0, insertion_auc = 0;
};

int64_t default_step(int64_t patches) {
  return std::max<int64_t>(1, patches / 16);
}

RolloutOptions rollout_options(const Config& config) {
  RolloutOptions options;
  options.fusion = config.analysis.head_fusion;
  options.discard_ratio = config.analysis.discard_ratio;
  options.source = rollout_source_of(config.model.pool);
  options.prefix_tokens = config.model.prefix_tokens();
  return options;
}

at::Tensor faithfulness_plot(const std::vector<FaithfulnessMethod>& methods,
                             const std::map<FaithfulnessMethod, MethodCurves>& curves,
                             int64_t patches, int64_t step, int64_t samples) {
  std::vector<double> x;
  for (const int64_t r : removed_counts(patches, step))
    x.push_back(static_cast<double>(r) / static_cast<double>(patches));
  io::Panel deletion;
  deletion.title = "Deletion, most salient first (lower AUC: better)";
  deletion.x_label = "fraction of patches removed";
  deletion.y_label = "probability of the explained class";
  io::Panel insertion;
  insertion.title = "Insertion, most salient first (higher AUC: better)";
  insertion.x_label = "fraction of patches inserted";
  insertion.y_label = "probability of the explained class";
  for (io::Panel* panel : {&deletion, &insertion}) {
    panel->x_min = 0;
    panel->x_max = 1;
    panel->y_min = 0;
    panel->y_max = 1;
  }
  for (const FaithfulnessMethod m : methods) {
    const MethodCurves& c = curves.at(m);
    const std::string name = faithfulness_method_name(m);
    deletion.series.push_back(
        {fmt::format("{} (AUC {:.3f})", name, c.deletion_auc), x, c.deletion});
    insertion.series.push_back(
        {fmt::format("{} (AUC {:.3f})", name, c.insertion_auc), x, c.insertion});
  }
  io::PlotOptions options;
  options.panel_width = 620;
  options.title = fmt::format("Deletion and insertion, {} images, {} patch{} per step", samples,
                              step, step == 1 ? "" : "es");
  return io::render_plot({deletion, insertion}, options);
}

}  // namespace

nlohmann::json write_faithfulness(OpenedModel& opened, const FaithfulnessOptions& o) {
  LoadedModel& loaded = opened.loaded;
  require_head(loaded, "faithfulness");
  const Config& config = loaded.config;
  const int64_t grid = config.model.image_size / config.model.patch_size;
  const int64_t patches = grid * grid;
  const int64_t step = o.step.value_or(default_step(patches));
  if (step < 1 || step > patches)
    throw Error(fmt::format("--step {}: expected 1..{}, the number of patches", step, patches));
  if (o.target_class && (*o.target_class < 0 || *o.target_class >= config.model.num_classes))
    throw Error(fmt::format("--class {} is outside the model's classes 0..{}", *o.target_class,
                            config.model.num_classes - 1));
  const uint64_t seed = o.common.seed.value_or(config.seed);
  const AnalysisInputs inputs =
      choose_analysis_inputs(o.images, o.samples.value_or(kFaithfulnessSamples), seed, opened);
  const RolloutOptions rollout = rollout_options(config);
  const auto& methods = faithfulness_methods();

  std::map<FaithfulnessMethod, MethodCurves> curves;
  // Images whose maps and curves are computed together: as many as hold their
  // attention maps in the budget (64 on the demo), since integrated gradients
  // and SmoothGrad run 32 and 25 passes a batch and small batches waste them.
  image_batches(inputs.pixels, config, opened.device, attention_batch_size(config.model))
      .for_each([&](int64_t first, const at::Tensor& x) {
        at::Tensor classes;
        if (o.target_class) {
          classes = torch::full({x.size(0)}, *o.target_class,
                                torch::TensorOptions(torch::kLong).device(x.device()));
        } else {
          torch::NoGradGuard no_grad;
          classes = loaded.model->forward(x).argmax(/*dim=*/1);
        }
        for (const FaithfulnessMethod m : methods) {
          const auto order =
              m == FaithfulnessMethod::kRandom
                  ? random_order(x.size(0), patches, seed, first)
                  : salience_order(method_scores(loaded.model, x, classes, m, rollout).cpu());
          const auto c = deletion_insertion(loaded.model, x, classes, order.to(x.device()), step);
          MethodCurves& total = curves[m];
          const auto d = c.deletion.sum(/*dim=*/0), i = c.insertion.sum(/*dim=*/0);
          total.deletion_sum = total.deletion_sum.defined() ? total.deletion_sum + d : d;
          total.insertion_sum = total.insertion_sum.defined() ? total.insertion_sum + i : i;
        }
      });

  const int64_t samples = inputs.pixels.size(0);
  nlohmann::json by_method = nlohmann::json::object();
  std::string csv = "method,deletion_auc,insertion_auc\n";
  std::cout << "method                deletion AUC  insertion AUC\n";
  for (const FaithfulnessMethod m : methods) {
    MethodCurves& c = curves[m];
    c.deletion = to_doubles(c.deletion_sum / static_cast<double>(samples));
    c.insertion = to_doubles(c.insertion_sum / static_cast<double>(samples));
    c.deletion_auc = curve_area(c.deletion, patches, step);
    c.insertion_auc = curve_area(c.insertion, patches, step);
    const std::string name = faithfulness_method_name(m);
    by_method[name] = {{"deletion_auc", c.deletion_auc},
                       {"insertion_auc", c.insertion_auc},
                       {"deletion", c.deletion},
                       {"insertion", c.insertion}};
    csv += fmt::format("{},{:.6g},{:.6g}\n", name, c.deletion_auc, c.insertion_auc);
    std::cout << fmt::format("{:<20}  {:12.4f}  {:13.4f}\n", name, c.deletion_auc, c.insertion_auc);
  }

  const fs::path out = output_folder(o.model, loaded, kFaithfulnessFolder);
  const nlohmann::json json = {{"samples", samples}, {"step", step}, {"methods", by_method}};
  write_text_atomically((out / "faithfulness.json").string(), json.dump(2) + "\n");
  write_text_atomically((out / "faithfulness.csv").string(), csv);
  io::write_png(out / "faithfulness.png",
                faithfulness_plot(methods, curves, patches, step, samples));
  spdlog::info("wrote faithfulness.json, .csv and .png to {}", out.string());
  return json;
}

std::shared_ptr<FaithfulnessOptions> register_faithfulness(Cli& cli) {
  auto [options, cmd] = add_command<FaithfulnessOptions>(
      cli, "faithfulness",
      "Deletion and insertion scores of the saliency methods: which map the model uses",
      on_opened_model(write_faithfulness));
  add_model_source_options(*cmd, options->model, /*reads_data=*/true, OutFolder::kBesideCheckpoint,
                           "faithfulness.json, .csv (one row per method) and .png",
                           kFaithfulnessFolder);
  add_sample_options(*cmd, options->samples, options->images, "test",
                     std::to_string(kFaithfulnessSamples));
  cmd->add_option("--step", options->step,
                  "patches removed (or inserted) per step (default: a 16th of the patches, at "
                  "least 1)")
      ->check(at_least_one());
  cmd->add_option("--class", options->target_class,
                  "class index K to explain (default: each image's predicted class)")
      ->check(CLI::NonNegativeNumber);
  return options;
}

}  // namespace vit::cli
