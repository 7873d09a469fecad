// vit eval: accuracy, loss, per-class accuracy and the confusion matrix of a
// checkpoint on the val or test split, with confusion.png and worst.png.
#include "commands/cmd_eval.hpp"

#include <filesystem>
#include <iostream>

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <torch/torch.h>
#include <nlohmann/json.hpp>

#include "cli/analysis_outputs.hpp"

#include "cli/opened_model.hpp"
#include "vit/atomic_write.hpp"
#include "vit/data/batch_loader.hpp"
#include "vit/data/data_splits.hpp"
#include "vit/data/materialize.hpp"
#include "vit/data/split_loader.hpp"
#include "vit/error.hpp"
#include "vit/infer/evaluate.hpp"
#include "vit/io/confusion.hpp"
#include "vit/io/grid.hpp"
#include "vit/io/image_io.hpp"

namespace vit::cli {
namespace {

namespace fs = std::filesystem;
constexpr int64_t kWorstImages = 24;

nlohmann::json metrics_json(const EvalResult& r, const std::vector<std::string>& classes,
                            const std::string& split, const std::string& checkpoint,
                            Precision precision) {
  nlohmann::json per_class = nlohmann::json::object();
  const auto accuracy = to_doubles(r.per_class_accuracy);
  for (size_t k = 0; k < classes.size(); ++k)
    per_class[classes[k]] =
        std::isnan(accuracy[k]) ? nlohmann::json(nullptr) : nlohmann::json(accuracy[k]);
  std::vector<std::vector<int64_t>> confusion;
  for (int64_t i = 0; i < r.confusion.size(0); ++i) {
    const auto row = r.confusion[i].contiguous();
    confusion.emplace_back(row.data_ptr<int64_t>(), row.data_ptr<int64_t>() + row.numel());
  }
  nlohmann::json j = {{"checkpoint", checkpoint},
                      {"split", split},
                      {"precision", enum_name(precision)},
                      {"images", r.count},
                      {"accuracy", r.accuracy},
                      {"loss", r.loss},
                      {"per_class_accuracy", per_class},
                      {"classes", classes},
                      {"confusion", confusion}};
  if (r.has_top5()) j["top5_accuracy"] = r.top5_accuracy();
  return j;
}

// The highest-loss images, captioned "predicted / true" (red when wrong).
// `images_at` gives the split's images at positions (in memory: indexed;
// streamed: decoded).
torch::Tensor worst_grid(const EvalResult& r,
                         const std::function<at::Tensor(const std::vector<int64_t>&)>& images_at,
                         const std::vector<std::string>& classes) {
  const int64_t n = std::min<int64_t>(kWorstImages, r.count);
  const auto worst = std::get<1>(r.losses.topk(n));
  std::vector<int64_t> positions;
  for (int64_t i = 0; i < n; ++i)
    positions.push_back(worst[i].item<int64_t>());
  const at::Tensor images = images_at(positions);
  std::vector<io::Tile> tiles;
  for (int64_t i = 0; i < n; ++i) {
    const int64_t index = positions[i];
    const int64_t predicted = r.predictions[index].item<int64_t>(),
                  truth = r.labels[index].item<int64_t>();
    io::Tile tile;
    tile.image = images[i];
    tile.caption = classes[predicted] + " / " + classes[truth] +
                   fmt::format("\nloss {:.2f}", r.losses[index].item<double>());
    if (predicted != truth) tile.color = {200, 0, 0};
    tiles.push_back(tile);
  }
  io::GridOptions options;
  options.columns = 8;
  options.title = "Highest-loss images: predicted / true";
  return io::make_grid(tiles, options);
}

}  // namespace

nlohmann::json write_eval(OpenedModel& opened, const EvalOptions& o) {
  LoadedModel& loaded = opened.loaded;
  require_head(loaded, "eval");
  const c10::Device device = opened.device;
  const Precision precision = chosen_precision(o.precision, loaded.config, device);
  const data::DataSplits& splits = opened.data();
  const data::SplitName which =
      o.split == EvalSplit::kVal ? data::SplitName::kVal : data::SplitName::kTest;
  const std::string split_name = enum_name(o.split);
  const int64_t images = which == data::SplitName::kVal ? splits.val_size() : splits.test_size();
  if (images == 0)
    throw Error("the " + split_name + " split of " + enum_name(loaded.config.data.dataset) +
                " is empty");
  const auto loader = data::loader_for(
      splits, which, loaded.config, data::loader_options(loaded.config, device, /*train=*/false));
  // By default the training precision, as in `vit predict` and the trainer's
  // final test, so the three agree on every image.
  const EvalResult r = evaluate(loaded.model, *loader, loaded.config.model.num_classes, precision);

  const std::string out = output_folder(o.model, loaded, "eval-" + split_name).string();
  const nlohmann::json json =
      metrics_json(r, loaded.class_names, split_name, loaded.path, precision);
  write_text_atomically(out + "/metrics.json", json.dump(2) + "\n");
  io::ConfusionOptions confusion_options;
  confusion_options.title = fmt::format("Confusion matrix, {} split ({} images, accuracy {:.2f}%)",
                                        split_name, r.count, 100 * r.accuracy);
  io::write_png(out + "/confusion.png",
                io::render_confusion(r.confusion, loaded.class_names, confusion_options));
  const auto images_at = [&](const std::vector<int64_t>& positions) {
    if (splits.streamed) {
      const auto& split =
          which == data::SplitName::kVal ? splits.streamed->val : splits.streamed->test;
      return data::materialize_at(split, loaded.config, positions).images;
    }
    const data::Dataset& split = which == data::SplitName::kVal ? splits.val : splits.test;
    return split.images.index_select(0, torch::tensor(positions, torch::kInt64));
  };
  io::write_png(out + "/worst.png", worst_grid(r, images_at, loaded.class_names));
  std::cout << fmt::format(
      "{} split: accuracy {:.4f}{} ({} images), loss {:.4f}\n", split_name, r.accuracy,
      r.has_top5() ? fmt::format(", top-5 {:.4f}", r.top5_accuracy()) : "", r.count, r.loss);
  spdlog::info("wrote {}/metrics.json, confusion.png and worst.png", out);
  return json;
}

std::shared_ptr<EvalOptions> register_eval(Cli& cli) {
  auto [options, cmd] = add_command<EvalOptions>(
      cli, "eval", "Evaluate a checkpoint: accuracy, confusion matrix, worst images",
      on_opened_model(write_eval));
  add_model_source_options(*cmd, options->model, /*reads_data=*/true, OutFolder::kBesideCheckpoint,
                           "metrics.json, confusion.png and worst.png", "eval-<split>");
  add_enum_option(*cmd, "--split", options->split, "the split to evaluate, default test");
  add_precision_option(*cmd, options->precision);
  return options;
}

}  // namespace vit::cli
