// vit data: the dataset as `vit train` would see it, a grid of augmented
// training images to check by eye, a benchmark of the batch pipeline from the
// files to the batch the trainer receives, and an image folder written as
// WebDataset shards.
#include <sys/resource.h>

#include <chrono>
#include <filesystem>
#include <iostream>
#include <thread>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>
#include <torch/torch.h>
#include <nlohmann/json.hpp>

#include "cli/config_files.hpp"
#include "commands/cmd_data.hpp"
#include "vit/atomic_write.hpp"
#include "vit/config.hpp"
#include "vit/data/batch_loader.hpp"
#include "vit/data/data_splits.hpp"
#include "vit/data/download/dataset_download.hpp"
#include "vit/data/epoch_order.hpp"
#include "vit/data/image_folder.hpp"
#include "vit/data/split_loader.hpp"
#include "vit/data/webdataset.hpp"
#include "vit/device.hpp"
#include "vit/error.hpp"
#include "vit/io/grid.hpp"
#include "vit/io/image_io.hpp"

namespace vit::cli {

namespace {

constexpr int64_t kSampleCount = 32;
constexpr int64_t kBenchWarmup = 5;
constexpr size_t kShownClasses = 20;

std::vector<int64_t> image_shape(const Config& c) {
  return {c.model.channels, c.model.image_size, c.model.image_size};
}

nlohmann::json describe(const Config& c, const data::DataSplits& s) {
  nlohmann::json j = {{"dataset", enum_name(c.data.dataset)},
                      {"train", s.train_size()},
                      {"val", s.val_size()},
                      {"test", s.test_size()},
                      {"classes", s.classes()},
                      {"image_shape", image_shape(c)},
                      {"root", c.data.root},
                      {"mean", s.mean},
                      {"std", s.std},
                      {"validation", enum_name(s.validation)},
                      {"streamed", s.streamed.has_value()}};
  if (s.streamed) j["stream_reason"] = s.streamed->reason;
  return j;
}

// The first kShownClasses names; Tiny-ImageNet's 200 would fill the screen.
std::string class_list(const std::vector<std::string>& classes) {
  const auto shown = std::min<size_t>(classes.size(), kShownClasses);
  std::string out = fmt::format("{}", fmt::join(classes.begin(), classes.begin() + shown, ", "));
  if (shown < classes.size()) out += fmt::format(", ... ({} more)", classes.size() - shown);
  return out;
}

std::string augment_text(const AugmentConfig& a) {
  std::string crop =
      a.random_resized_crop
          ? fmt::format("random resized crop (scale [{}], ratio [{}])",
                        fmt::join(a.random_resized_crop->scale, ", "),
                        fmt::join(a.random_resized_crop->ratio, ", "))
          : fmt::format("crop padding {} ({})", a.crop_padding, enum_name(a.padding_mode));
  return fmt::format("{}, hflip {}, RandAugment {} x {}, mixup {}, cutmix {}, random erasing {}",
                     crop, a.hflip ? "on" : "off", a.randaugment_ops, a.randaugment_magnitude,
                     a.mixup_alpha, a.cutmix_alpha, a.random_erasing);
}

void print_text(const Config& c, const data::DataSplits& s) {
  const auto shape = image_shape(c);
  const std::string held_out =
      c.data.dataset == DatasetKind::kWebdataset
          ? fmt::format("data.val_shards {}", c.data.val_shards)
      : s.validation == ValidationSource::kFolder
          ? std::string("the val/ folder; no test split")
          : fmt::format("held out of the official training set, seed {}", c.seed);
  std::cout << fmt::format("{}: {}\n", enum_name(c.data.dataset), c.data.root)
            << fmt::format("  train    {:>7} images\n", s.train_size())
            << fmt::format("  val      {:>7} images ({})\n", s.val_size(), held_out)
            << fmt::format("  test     {:>7} images\n", s.test_size())
            << fmt::format("  image    {} x {} x {}\n", shape[0], shape[1], shape[2])
            << fmt::format("  classes  {}: {}\n", s.classes().size(), class_list(s.classes()))
            << fmt::format("  mean     [{}]\n  std      [{}]\n", fmt::join(s.mean, ", "),
                           fmt::join(s.std, ", "))
            << fmt::format("  augment  {}\n", augment_text(c.data.augment))
            << fmt::format("  path     {}\n", s.streamed
                                                  ? "streamed, read and decoded every epoch (" +
                                                        s.streamed->reason + ")"
                                                  : std::string("in memory, decoded once"));
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
  const int64_t count = std::min(kSampleCount, s.train_size());
  if (count == 0) throw Error("vit data --out: the training split is empty, nothing to show");
  const auto loader =
      data::loader_for(s, data::SplitName::kTrain, c, train_loader_options(c, device, count));
  const auto batch = loader->batch_unnormalized(/*epoch=*/0, /*step=*/0);
  const auto images = io::to_uint8(batch.images.cpu());
  std::vector<io::Tile> tiles;
  for (int64_t i = 0; i < count; ++i)
    tiles.push_back({images[i], caption(batch, i, s.classes())});
  io::GridOptions grid;
  grid.title = fmt::format("{}: training images after augmentation (epoch 0, batch 0)",
                           enum_name(c.data.dataset));
  const auto path = std::filesystem::path(dir) / "samples.png";
  io::write_png(path, io::make_grid(tiles, grid));
  spdlog::info("wrote {}", path.string());
}

double peak_resident_mib() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss / 1024.0;  // ru_maxrss is in KiB on Linux
}

// Times training batches from the files (or the in-memory dataset) to the
// batch the trainer receives: reading, decoding, cropping, the batch
// augmentation and the normalisation, on the configured device.
void bench(const Config& c, const data::DataSplits& s, c10::Device device, int64_t batches) {
  const auto loader = data::loader_for(s, data::SplitName::kTrain, c,
                                       train_loader_options(c, device, c.train.batch_size));
  const int64_t per_epoch = loader->batches_per_epoch();
  if (per_epoch == 0) throw Error("vit data --bench: fewer training images than one batch");
  auto run = [&](int64_t first, int64_t n) {
    double checksum = 0.0;
    for (int64_t k = first; k < first + n; ++k) {
      const auto batch = loader->batch(k / per_epoch, k % per_epoch);
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
  const auto shape = image_shape(c);
  const std::string path =
      s.streamed ? fmt::format("streamed, {} workers",
                               c.data.workers > 0 ? c.data.workers
                                                  : int64_t(std::thread::hardware_concurrency()))
                 : std::string("in memory");
  std::cout << fmt::format(
      "pipeline: {:.0f} images/s ({} batches of {} x {}x{}x{} in {:.2f} s, {}, {} LibTorch "
      "threads, {}; {}); peak resident memory {:.0f} MiB\n",
      images / seconds, batches, c.train.batch_size, shape[0], shape[1], shape[2], seconds, path,
      torch::get_num_threads(), device.str(), augment_text(c.data.augment), peak_resident_mib());
}

// The image folder's training and test files as WebDataset shards in `dir`,
// with classes.txt, and the config lines that read them.
void write_folder_shards(const Config& c, const std::string& dir, int64_t per_shard) {
  if (c.data.dataset != DatasetKind::kImageFolder)
    throw Error("vit data --write-shards: data.dataset is " +
                std::string(enum_name(c.data.dataset)) + ", expected image-folder");
  if (per_shard < 1)
    throw Error("vit data --shard-size: " + std::to_string(per_shard) + ", expected >= 1");
  const auto listing = data::list_image_folder(c.data.root, c.model.channels, c.model.image_size);
  std::filesystem::create_directories(dir);
  const auto write = [&](const data::FileList& files, const std::string& prefix) {
    // Shuffled once, seeded: a shard holds a mix of classes, as the shuffle
    // buffer of a streamed epoch expects.
    const auto order = data::epoch_order(files.size(), c.seed, 0);
    std::vector<data::ShardInput> inputs;
    for (const int64_t i : order)
      inputs.push_back({files.path(i), files.label(i)});
    return data::write_shards(inputs, dir, prefix, per_shard, [&](int64_t written) {
      spdlog::info("{}: {} of {} images written", prefix, written, inputs.size());
    });
  };
  const std::string train = write(listing.train, "train");
  std::string classes;
  for (const auto& name : listing.classes)
    classes += name + "\n";
  write_text_atomically(std::filesystem::path(dir) / "classes.txt", classes);
  std::cout << fmt::format("wrote {} training images to {}/{}\n", listing.train.size(), dir, train);
  std::string test;
  if (!listing.evaluation.empty()) {
    test = write(listing.evaluation, "val");
    std::cout << fmt::format("wrote {} validation images to {}/{}\n", listing.evaluation.size(),
                             dir, test);
  }
  std::cout << fmt::format(
      "read them with --set data.dataset=webdataset --set data.root={} --set "
      "data.train_shards='{}'{}\n",
      dir, train,
      test.empty() ? std::string(" --set data.val_shards=...")
                   : fmt::format(" --set data.val_shards='{}'", test));
}

int run_data(const DataOptions& o) {
  apply_common_options(o.common);
  Config config = load_config(o.config, o.overrides);
  if (o.common.seed) config.seed = *o.common.seed;
  const c10::Device device = chosen_device(o.common, &config);
  if (o.download || config.data.download) data::download_dataset(config.data);
  if (!o.write_shards.empty()) {
    write_folder_shards(config, o.write_shards, o.shard_size);
    return 0;
  }
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
                  "time N training batches, from the files (or the in-memory dataset) to the "
                  "batch the trainer receives; prints images/s and the peak resident memory")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--write-shards", options->write_shards,
                  "write the image folder's training and test images as WebDataset shards "
                  "(train-NNNNNN.tar, val-NNNNNN.tar, classes.txt) into DIR");
  cmd->add_option("--shard-size", options->shard_size, "images a shard (--write-shards)")
      ->check(CLI::PositiveNumber);
  return options;
}

}  // namespace vit::cli
