// vit data: the dataset as `vit train` would see it, a grid of augmented
// training images to check by eye, and (hidden) a batch pipeline benchmark.
#include <chrono>
#include <filesystem>
#include <iostream>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>
#include <torch/torch.h>
#include <nlohmann/json.hpp>

#include "cmd_data.hpp"
#include "config_files.hpp"
#include "vit/config.hpp"
#include "vit/data/dataset_download.hpp"
#include "vit/data/load.hpp"
#include "vit/data/loader.hpp"
#include "vit/device.hpp"
#include "vit/error.hpp"
#include "vit/io/grid.hpp"
#include "vit/io/image_io.hpp"

namespace vit::cli {

namespace {

constexpr int64_t kSampleCount = 32;
constexpr int64_t kBenchWarmup = 5;
constexpr size_t kShownClasses = 20;

std::vector<int64_t> image_shape(const data::DataSplits& s) {
  const auto& images = s.train.images;
  return {images.size(1), images.size(2), images.size(3)};
}

nlohmann::json describe(const Config& c, const data::DataSplits& s) {
  return {{"dataset", name_of(c.data.dataset)},
          {"train", s.train.size()},
          {"val", s.val.size()},
          {"test", s.test.size()},
          {"classes", s.train.classes},
          {"image_shape", image_shape(s)},
          {"root", c.data.root},
          {"mean", s.mean},
          {"std", s.std}};
}

// The first kShownClasses names; Tiny-ImageNet's 200 would fill the screen.
std::string class_list(const std::vector<std::string>& classes) {
  const auto shown = std::min<size_t>(classes.size(), kShownClasses);
  std::string out = fmt::format("{}", fmt::join(classes.begin(), classes.begin() + shown, ", "));
  if (shown < classes.size()) out += fmt::format(", ... ({} more)", classes.size() - shown);
  return out;
}

void print_text(const Config& c, const data::DataSplits& s) {
  const auto shape = image_shape(s);
  const auto& a = c.data.augment;
  std::cout << fmt::format("{}: {}\n", name_of(c.data.dataset), c.data.root)
            << fmt::format("  train    {:>7} images\n", s.train.size())
            << fmt::format(
                   "  val      {:>7} images (held out of the official "
                   "training set, seed {})\n",
                   s.val.size(), c.seed)
            << fmt::format("  test     {:>7} images\n", s.test.size())
            << fmt::format("  image    {} x {} x {}\n", shape[0], shape[1], shape[2])
            << fmt::format("  classes  {}: {}\n", s.train.num_classes(),
                           class_list(s.train.classes))
            << fmt::format("  mean     [{}]\n  std      [{}]\n", fmt::join(s.mean, ", "),
                           fmt::join(s.std, ", "))
            << fmt::format(
                   "  augment  crop padding {} ({}), hflip {}, "
                   "RandAugment {} x {}, mixup {}, cutmix {}\n",
                   a.crop_padding, a.padding_mode, a.hflip ? "on" : "off", a.randaugment_ops,
                   a.randaugment_magnitude, a.mixup_alpha, a.cutmix_alpha);
}

data::LoaderOptions train_loader_options(const Config& c, c10::Device device, int64_t batch_size) {
  auto o = data::loader_options(c, device, /*train=*/true);
  o.batch_size = batch_size;
  return o;
}

// "Coat", or "Coat 0.62 / Bag 0.38" when mixup/cutmix blended two labels.
std::string caption(const data::Batch& batch, int64_t i, const std::vector<std::string>& classes) {
  if (!batch.targets.defined()) return classes[batch.labels[i].item<int64_t>()];
  const auto [weights, index] = batch.targets[i].topk(2);
  const double second = weights[1].item<double>();
  if (second < 0.005) return classes[index[0].item<int64_t>()];
  return fmt::format("{} {:.2f}\n{} {:.2f}", classes[index[0].item<int64_t>()],
                     weights[0].item<double>(), classes[index[1].item<int64_t>()], second);
}

void write_samples(const Config& c, const data::DataSplits& s, c10::Device device,
                   const std::string& dir) {
  const int64_t count = std::min(kSampleCount, s.train.size());
  if (count == 0) throw Error("vit data --out: the training split is empty, nothing to show");
  const data::BatchLoader loader(s.train, train_loader_options(c, device, count));
  const auto batch = loader.batch_unnormalized(/*epoch=*/0, /*step=*/0);
  const auto images = io::to_uint8(batch.images.cpu());
  std::vector<io::Tile> tiles;
  for (int64_t i = 0; i < count; ++i)
    tiles.push_back({images[i], caption(batch, i, s.train.classes)});
  io::GridOptions grid;
  grid.title = fmt::format("{}: training images after augmentation (epoch 0, batch 0)",
                           name_of(c.data.dataset));
  const auto path = std::filesystem::path(dir) / "samples.png";
  io::write_png(path, io::make_grid(tiles, grid));
  spdlog::info("wrote {}", path.string());
}

// Times the in-memory pipeline (index, augment, normalise) over training
// batches.
void bench(const Config& c, const data::DataSplits& s, c10::Device device, int64_t batches) {
  const data::BatchLoader loader(s.train, train_loader_options(c, device, c.train.batch_size));
  const int64_t per_epoch = loader.batches_per_epoch();
  if (per_epoch == 0) throw Error("vit data --bench: fewer training images than one batch");
  auto run = [&](int64_t first, int64_t n) {
    double checksum = 0.0;
    for (int64_t k = first; k < first + n; ++k) {
      const auto batch = loader.batch(k / per_epoch, k % per_epoch);
      if (k == first + n - 1) checksum = batch.images.sum().item<double>();  // waits for the device
    }
    return checksum;
  };
  run(0, kBenchWarmup);
  const auto start = std::chrono::steady_clock::now();
  run(kBenchWarmup, batches);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const auto images = static_cast<double>(batches * c.train.batch_size);
  const auto shape = image_shape(s);
  std::cout << fmt::format(
      "pipeline: {:.0f} images/s ({} batches of {} x {}x{}x{} in {:.2f} s, {} "
      "threads, {}; crop {} {}, "
      "hflip {}, RandAugment {}, mixup {}, cutmix {})\n",
      images / seconds, batches, c.train.batch_size, shape[0], shape[1], shape[2], seconds,
      torch::get_num_threads(), device.str(), c.data.augment.crop_padding,
      c.data.augment.padding_mode, c.data.augment.hflip ? "on" : "off",
      c.data.augment.randaugment_ops, c.data.augment.mixup_alpha, c.data.augment.cutmix_alpha);
}

int run_data(const DataOptions& o) {
  apply_common_options(o.common);
  Config config = load_config(o.config, o.overrides);
  if (o.common.seed) config.seed = *o.common.seed;
  const c10::Device device = chosen_device(o.common, &config);
  if (o.download || config.data.download) data::download_dataset(config.data);
  const data::DataSplits splits = data::load_data(config);
  if (o.json) {
    std::cout << describe(config, splits).dump(2) << "\n";
  } else if (o.bench == 0) {
    print_text(config, splits);
  }
  if (!o.out.empty()) write_samples(config, splits, device, o.out);
  if (o.bench > 0) bench(config, splits, device, o.bench);
  return 0;
}

}  // namespace

std::shared_ptr<DataOptions> register_data(Cli& cli) {
  auto [options, cmd] = add_command<DataOptions>(
      cli, "data", "Inspect a dataset as `vit train` would see it", run_data);
  cmd->add_option("--config", options->config,
                  "JSON config file, or a shipped config's name (vit config --list)")
      ->required()
      ->transform(config_file());
  cmd->add_option("--set", options->overrides,
                  "override a config key, e.g. --set data.val_size=1000");
  cmd->add_flag("--json", options->json, "print JSON instead of text");
  cmd->add_flag("--download", options->download,
                "download the dataset's official archive into data.root first, unless data.root "
                "holds it already (as data.download: true does)");
  cmd->add_option("--out", options->out,
                  "write DIR/samples.png, a grid of augmented training images");
  cmd->add_option("--bench", options->bench,
                  "time N training batches of the in-memory pipeline")
      ->check(CLI::NonNegativeNumber)
      ->group("");  // hidden: a developer tool, see scripts/bench/pipeline.sh
  return options;
}

}  // namespace vit::cli
