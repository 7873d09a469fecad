// vit predict: the top-K classes of each image, as text or JSON.
#include "commands/cmd_predict.hpp"

#include <iostream>

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <torch/torch.h>
#include <nlohmann/json.hpp>

#include "cli/analysis_outputs.hpp"
#include "cli/input_images.hpp"
#include "cli/opened_model.hpp"
#include "vit/infer/precision.hpp"

namespace vit::cli {
namespace {

int run_predict(const PredictOptions& o) {
  OpenedModel opened = open_model(o.common, o.model);
  const c10::Device device = opened.device;
  LoadedModel& loaded = opened.loaded;
  require_head(loaded, "predict");
  const Precision precision = chosen_precision(o.precision, loaded.config, device);
  const int64_t classes = loaded.config.model.num_classes;
  int64_t k = o.topk;
  if (k > classes) {
    spdlog::warn("--topk {} is more than the model's {} classes; showing all {}", k, classes,
                 classes);
    k = classes;
  }
  const ImageInputs inputs = load_image_inputs(o.images, loaded.config, device);
  torch::Tensor logits;
  {
    torch::NoGradGuard no_grad;
    // By default the training precision, as in `vit eval` and the trainer's
    // final test, so the three agree on every image.
    AutocastScope autocast(precision, device);
    logits = loaded.model->forward(inputs.normalized).to(torch::kFloat).cpu();  // (B, K)
  }
  const auto probs = torch::softmax(logits, /*dim=*/1);
  const auto [top_probs, top_index] = probs.topk(k, /*dim=*/1);

  nlohmann::json out = nlohmann::json::array();
  for (size_t i = 0; i < inputs.paths.size(); ++i) {
    nlohmann::json top = nlohmann::json::array();
    for (int64_t j = 0; j < k; ++j) {
      const int64_t index = top_index[i][j].item<int64_t>();
      top.push_back({{"index", index},
                     {"class", loaded.class_names[index]},
                     {"prob", top_probs[i][j].item<double>()}});
    }
    out.push_back({{"image", inputs.paths[i]},
                   {"logits", to_doubles(logits[i])},
                   {"probs", to_doubles(probs[i])},
                   {"top", top}});
  }
  if (o.json) {
    std::cout << out.dump(2) << "\n";
    return 0;
  }
  for (const auto& item : out) {
    std::cout << item["image"].get<std::string>() << "\n";
    for (const auto& t : item["top"])
      std::cout << fmt::format("  {:6.2f}%  {} ({})\n", 100 * t["prob"].get<double>(),
                               t["class"].get<std::string>(), t["index"].get<int64_t>());
  }
  return 0;
}

}  // namespace

std::shared_ptr<PredictOptions> register_predict(Cli& cli) {
  auto [options, cmd] = add_command<PredictOptions>(
      cli, "predict", "Classify images with a checkpoint (top-K classes)", run_predict);
  add_model_source_options(*cmd, options->model, /*reads_data=*/false, OutFolder::kNone);
  cmd->add_option("--images", options->images, "image files (any size and channel count)")
      ->required()
      ->check(CLI::ExistingFile);
  cmd->add_option("--topk", options->topk, "how many classes to show")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_flag("--json", options->json, "print a JSON array");
  add_precision_option(*cmd, options->precision);
  return options;
}

}  // namespace vit::cli
