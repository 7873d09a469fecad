// vit saliency: which pixels (grad, grad-x-input, integrated-gradients,
// smoothgrad) or patches (grad-rollout, Chefer et al. 2021) move the logit of
// the explained class, for validation samples or the user's images. Writes
// saliency.json ({"method", "maps": [{"image", "label", "class", "mask"}]},
// masks raw: integrated gradients' with their sign, each map with its
// "completeness_error"), saliency.csv (one row per image: its label, the
// explained class with its logit and probability, and where |map| peaks), one
// PNG per map (original | overlay of |map|, scaled to its maximum) and grid.png.
#include "analyses/cmd_saliency.hpp"

#include <cmath>
#include <filesystem>

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <torch/torch.h>
#include <nlohmann/json.hpp>

#include "cli/analysis_outputs.hpp"
#include "cli/input_images.hpp"
#include "cli/opened_model.hpp"
#include "vit/analysis/saliency.hpp"
#include "vit/atomic_write.hpp"
#include "vit/error.hpp"
#include "vit/io/csv.hpp"
#include "vit/io/heatmap.hpp"
#include "vit/io/image_io.hpp"

namespace vit::cli {
namespace {

// Where the files go without --out: a folder of this name next to the checkpoint.
constexpr char kSaliencyFolder[] = "saliency";

namespace fs = std::filesystem;

struct SaliencyMap {
  std::string id, file;
  torch::Tensor mask;             // float (S, S) or (g, g), raw
  double completeness_error = 0;  // integrated gradients
  int64_t label = -1;             // -1: unknown (--images)
  int64_t explained = 0, predicted = 0;
  double logit = 0, probability = 0;  // of the explained class
};

// The settings of integrated-gradients and smoothgrad for `pixels`.
GradientAveraging averaging_of(const SaliencyOptions& o, const at::Tensor& pixels,
                               const Config& config, c10::Device device) {
  GradientAveraging averaging;
  averaging.steps = o.steps;
  if (o.baseline == SaliencyBaseline::kBlack)
    averaging.baseline =
        normalize_pixels(torch::zeros_like(pixels[0]).unsqueeze(0), config, device);
  averaging.noise = o.noise;
  averaging.samples = o.samples_per_image;
  averaging.seed = o.common.seed.value_or(config.seed);
  return averaging;
}

// Every image's map, `batch_size` images per backward pass.
std::vector<SaliencyMap> compute_maps(LoadedModel& loaded, const AnalysisInputs& inputs,
                                      const SaliencyOptions& o, c10::Device device) {
  const Config& config = loaded.config;
  const RolloutSource source = rollout_source_of(config.model.pool);
  const int64_t count = inputs.pixels.size(0);
  const int64_t batch_size = attention_batch_size(config.model);
  std::vector<SaliencyMap> maps(static_cast<size_t>(count));
  for (int64_t first = 0; first < count; first += batch_size) {
    const auto pixels = inputs.pixels.slice(/*dim=*/0, first, std::min(first + batch_size, count));
    const auto classes = o.target_class
                             ? torch::full({pixels.size(0)}, *o.target_class, torch::kLong)
                             : torch::Tensor();
    GradientAveraging averaging = averaging_of(o, pixels, config, device);
    averaging.seed += static_cast<uint64_t>(first);  // each batch its own noise
    const Saliency s = compute_saliency(loaded.model, normalize_pixels(pixels, config, device),
                                        o.method, classes, source, averaging);
    const auto logits = s.logits.to(torch::kCPU, torch::kDouble);
    const auto probabilities = logits.softmax(/*dim=*/1);
    const auto predicted = logits.argmax(/*dim=*/1);
    const auto explained = s.classes.cpu();
    for (int64_t i = 0; i < pixels.size(0); ++i) {
      SaliencyMap& m = maps[first + i];
      m.mask = s.maps[i].cpu();
      if (s.completeness_error.defined())
        m.completeness_error = s.completeness_error[i].item<double>();
      m.predicted = predicted[i].item<int64_t>();
      m.explained = explained[i].item<int64_t>();
      m.logit = logits[i][m.explained].item<double>();
      m.probability = probabilities[i][m.explained].item<double>();
    }
  }
  return maps;
}

// What each method's JSON says of its settings.
nlohmann::json method_settings(const SaliencyOptions& o) {
  if (o.method == SaliencyMethod::kIntegratedGradients)
    return {{"steps", o.steps}, {"baseline", enum_name(o.baseline)}};
  if (o.method == SaliencyMethod::kSmoothGrad)
    return {{"noise", o.noise}, {"samples_per_image", o.samples_per_image}};
  return nlohmann::json::object();
}

nlohmann::json saliency_json(const std::vector<SaliencyMap>& maps, const SaliencyOptions& o,
                             const LoadedModel& loaded) {
  nlohmann::json list = nlohmann::json::array();
  for (const auto& m : maps) {
    const bool known = m.label >= 0;
    list.push_back({{"image", m.id},
                    {"label", known ? nlohmann::json(m.label) : nlohmann::json(nullptr)},
                    {"class", m.explained},
                    {"class_name", class_name(loaded.class_names, m.explained)},
                    {"predicted", m.predicted},
                    {"logit", m.logit},
                    {"probability", m.probability},
                    {"png", m.file},
                    {"mask", map_rows(m.mask)}});
    if (o.method == SaliencyMethod::kIntegratedGradients)
      list.back()["completeness_error"] = m.completeness_error;
  }
  return {{"method", enum_name(o.method)},
          {"settings", method_settings(o)},
          {"requested_class",
           o.target_class ? nlohmann::json(*o.target_class) : nlohmann::json(nullptr)},
          {"checkpoint", loaded.path},
          {"maps", list}};
}

// One row per map. The peak is |mask|'s largest value and its row and column
// from 0: pixels, or patches for grad-rollout; the mean is |mask|'s.
std::string saliency_csv(const std::vector<SaliencyMap>& maps, const LoadedModel& loaded) {
  std::string csv =
      "image,label,class,class_name,predicted,logit,probability,peak_row,peak_column,peak,mean,"
      "png\n";
  for (const auto& m : maps) {
    const auto magnitude = m.mask.abs();
    const int64_t side = m.mask.size(1);
    const int64_t at = magnitude.argmax().item<int64_t>();
    csv += fmt::format("{},{},{},{},{},{:.6g},{:.6g},{},{},{:.6g},{:.6g},{}\n", io::csv_field(m.id),
                       m.label >= 0 ? std::to_string(m.label) : "", m.explained,
                       io::csv_field(class_name(loaded.class_names, m.explained)), m.predicted,
                       m.logit, m.probability, at / side, at % side, magnitude.max().item<double>(),
                       magnitude.mean().item<double>(), io::csv_field(m.file));
  }
  return csv;
}

std::string grid_title(SaliencyMethod method, std::optional<int64_t> target,
                       const std::vector<std::string>& classes) {
  const std::string what = [&]() -> std::string {
    switch (method) {
      case SaliencyMethod::kGradRollout:
        return "gradient rollout (Chefer et al. 2021)";
      case SaliencyMethod::kGrad:
        return "|d logit / d pixel|";
      case SaliencyMethod::kGradXInput:
        return "|input x gradient|";
      case SaliencyMethod::kIntegratedGradients:
        return "|integrated gradients| (Sundararajan et al. 2017)";
      case SaliencyMethod::kSmoothGrad:
        break;
    }
    return "SmoothGrad (Smilkov et al. 2017)";
  }();
  return fmt::format("Saliency, {}: original | overlay, explaining {}", what,
                     target ? "class " + class_name(classes, *target) : "the predicted class");
}

// The averaging settings, checked before any image is read.
void check_averaging(const SaliencyOptions& o) {
  if (o.steps < 1) throw Error(fmt::format("--steps {}: expected at least 1", o.steps));
  if (o.samples_per_image < 1)
    throw Error(fmt::format("--samples-per-image {}: expected at least 1", o.samples_per_image));
  if (!std::isfinite(o.noise) || o.noise < 0)
    throw Error(fmt::format("--noise {}: expected a fraction of the input's range, >= 0", o.noise));
}

void check_target(std::optional<int64_t> target, const ModelConfig& model) {
  if (target && (*target < 0 || *target >= model.num_classes))
    throw Error(fmt::format("--class {} is outside the model's classes 0..{}", *target,
                            model.num_classes - 1));
}

}  // namespace

nlohmann::json write_saliency(OpenedModel& opened, const SaliencyOptions& o) {
  LoadedModel& loaded = opened.loaded;
  require_head(loaded, "saliency");
  const Config& config = loaded.config;
  check_target(o.target_class, config.model);
  check_averaging(o);
  const AnalysisInputs inputs =
      choose_analysis_inputs(o.images, o.samples.value_or(config.analysis.rollout_samples),
                             o.common.seed.value_or(config.seed), opened);

  std::vector<SaliencyMap> maps = compute_maps(loaded, inputs, o, opened.device);
  const fs::path out = output_folder(o.model, loaded, kSaliencyFolder);
  std::vector<OverlayPicture> pictures;
  for (size_t i = 0; i < maps.size(); ++i) {
    SaliencyMap& m = maps[i];
    m.id = inputs.ids[i];
    m.file = map_file_name(m.id, i, maps.size());
    if (inputs.labels.defined()) m.label = inputs.labels[static_cast<int64_t>(i)].item<int64_t>();
    // The picture shows |mask|, scaled to its own maximum; the JSON keeps it raw.
    const auto magnitude = m.mask.abs();
    const auto peak = magnitude.max().item<double>();
    const auto picture = io::heatmap_beside(inputs.pixels[static_cast<int64_t>(i)],
                                            peak > 0 ? magnitude / peak : magnitude);
    io::write_png(out / m.file, picture);
    pictures.push_back({picture, m.id, m.label, m.predicted});
  }
  io::write_png(out / "grid.png",
                overlay_grid(pictures, loaded.class_names,
                             grid_title(o.method, o.target_class, loaded.class_names)));
  const nlohmann::json json = saliency_json(maps, o, loaded);
  write_text_atomically((out / "saliency.json").string(), json.dump() + "\n");
  write_text_atomically((out / "saliency.csv").string(), saliency_csv(maps, loaded));
  spdlog::info("wrote {} {} maps, grid.png, saliency.json and .csv to {}", maps.size(),
               enum_name(o.method), out.string());
  return json;
}

std::shared_ptr<SaliencyOptions> register_saliency(Cli& cli) {
  auto [options, cmd] = add_command<SaliencyOptions>(
      cli, "saliency", "Gradient saliency maps of validation samples or your images",
      on_opened_model(write_saliency));
  add_model_source_options(*cmd, options->model, /*reads_data=*/true, OutFolder::kBesideCheckpoint,
                           "one PNG per map, grid.png, saliency.json and .csv", kSaliencyFolder);
  add_sample_options(*cmd, options->samples, options->images, "map", "analysis.rollout_samples");
  add_enum_option(*cmd, "--method", options->method,
                  "grad: |d logit/d x| (max over channels); grad-x-input: |sum_c x * d logit/d x|; "
                  "grad-rollout (the default): gradient-weighted attention rollout (Chefer et al. "
                  "2021); integrated-gradients: sum_c of (x - baseline) * the mean gradient on "
                  "the path (Sundararajan et al. 2017); smoothgrad: the grad map averaged over "
                  "noisy copies (Smilkov et al. 2017)");
  cmd->add_option("--class", options->target_class,
                  "class index K to explain (default: each image's predicted class)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--steps", options->steps,
                  "integrated-gradients: Gauss-Legendre points on the path, as Captum's default")
      ->capture_default_str();
  add_enum_option(*cmd, "--baseline", options->baseline,
                  "integrated-gradients: mean (the data's mean image, 0 once normalised; the "
                  "default) or black (pixels of 0)");
  cmd->add_option("--noise", options->noise,
                  "smoothgrad: the noise's standard deviation, a fraction of each image's range")
      ->capture_default_str();
  cmd->add_option("--samples-per-image", options->samples_per_image,
                  "smoothgrad: noisy copies of each image")
      ->capture_default_str();
  return options;
}

}  // namespace vit::cli
