#include "vit/data/data_splits.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <optional>

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <torch/torch.h>

#include "vit/data/brace_pattern.hpp"
#include "vit/data/cifar.hpp"
#include "vit/data/idx.hpp"
#include "vit/data/image_folder.hpp"
#include "vit/data/image_listing.hpp"
#include "vit/data/image_transform.hpp"
#include "vit/data/rng.hpp"
#include "vit/data/shared_listing.hpp"
#include "vit/data/split.hpp"
#include "vit/data/synthetic.hpp"
#include "vit/data/tiny_imagenet.hpp"
#include "vit/data/webdataset.hpp"
#include "vit/error.hpp"
#include "vit/io/image_io.hpp"
#include "vit/torchrun_env.hpp"

namespace vit::data {

namespace {

// Stream tags, so each subset draws its own random numbers from the seed.
constexpr uint64_t kValStream = 11;
constexpr uint64_t kLimitTrainStream = 12;
constexpr uint64_t kLimitTestStream = 13;
constexpr int64_t kLumaChunk = 4096;  // images converted at a time, to bound the float copy

uint64_t stream_seed(uint64_t seed, uint64_t stream) {
  return Rng::derive({seed, stream}).next();
}

Dataset limited(const Dataset& data, int64_t limit, uint64_t seed) {
  if (limit <= 0 || limit >= data.size()) return data;
  return data.subset(stratified_pick(data.labels, data.num_classes(), limit, seed).picked);
}

at::Tensor to_luma(const at::Tensor& rgb) {
  const auto weights = torch::tensor({0.299f, 0.587f, 0.114f}).view({1, 3, 1, 1});
  std::vector<at::Tensor> parts;
  for (int64_t begin = 0; begin < rgb.size(0); begin += kLumaChunk) {
    const auto chunk = rgb.slice(0, begin, begin + kLumaChunk).to(torch::kFloat32);
    parts.push_back(
        (chunk * weights).sum(1, /*keepdim=*/true).round_().clamp_(0, 255).to(torch::kUInt8));
  }
  if (parts.empty()) return torch::empty({0, 1, rgb.size(2), rgb.size(3)}, torch::kUInt8);
  return torch::cat(parts);
}

}  // namespace

DatasetPair read_dataset(const DataConfig& data, const ModelConfig& model, uint64_t seed) {
  const int64_t channels = model.channels, side = model.image_size;
  const std::filesystem::path root = data.root;
  ImageLoadOptions options;
  options.skip_corrupt = data.skip_corrupt;
  options.cache_dir = data.cache_dir;
  switch (data.dataset) {
    case DatasetKind::kCifar10:
      return load_cifar(root, CifarKind::kCifar10);
    case DatasetKind::kCifar100:
      return load_cifar(root, CifarKind::kCifar100);
    case DatasetKind::kMnist:
    case DatasetKind::kFashionMnist:
      return load_mnist(root, data.dataset);
    case DatasetKind::kTinyImagenet:
      return load_tiny_imagenet(root, options);
    case DatasetKind::kImageFolder:
      return load_image_folder(root, channels, side, options);
    case DatasetKind::kWebdataset:
      throw Error("webdataset: shards are streamed, never read whole (data/stream_loader)");
    case DatasetKind::kSynthetic:
      return make_synthetic(synthetic_shape(data.limit_train, data.val_size, data.limit_test,
                                            channels, side, model.num_classes),
                            seed);
  }
  throw Error("data.dataset: not a dataset vit reads");  // unreachable: parsed from a name
}

Dataset conform(const Dataset& data, int64_t channels, int64_t side) {
  Dataset out = data;
  const int64_t have = data.images.size(1);
  if (have == 1 && channels == 3) {
    out.images =
        data.images.expand({data.size(), 3, data.images.size(2), data.images.size(3)}).contiguous();
  } else if (have == 3 && channels == 1) {
    out.images = to_luma(data.images);
  } else if (have != channels) {
    throw Error(data.source + ": cannot convert " + std::to_string(have) + "-channel images to " +
                std::to_string(channels) + " channels");
  }
  if (out.size() > 0)
    out.images = io::resize_batch(out.images, side);
  else
    out.images = torch::empty({0, channels, side, side}, torch::kUInt8);
  return out;
}

namespace {

constexpr int64_t kBytesPerMiB = 1 << 20;

// A quarter of the machine's memory: the default data.memory_budget_mb.
int64_t default_memory_budget_bytes() {
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGE_SIZE);
  if (pages <= 0 || page <= 0) return int64_t{4} << 30;  // unknown: 4 GiB
  return static_cast<int64_t>(pages) * page / 4;
}

bool can_stream(DatasetKind dataset) {
  return dataset == DatasetKind::kImageFolder || dataset == DatasetKind::kTinyImagenet ||
         dataset == DatasetKind::kWebdataset;
}

// The file listing of a dataset read file by file; nullopt for the others.
std::optional<ImageListing> listing_of(const Config& config, ValidationSource validation) {
  const auto& d = config.data;
  if (d.dataset == DatasetKind::kImageFolder) {
    const bool val_folder = validation == ValidationSource::kFolder;
    const auto list = [&] {
      return list_image_folder(d.root, config.model.channels, config.model.image_size, val_folder);
    };
    // torchrun's ranks on one machine share one list (data/shared_listing.hpp).
    if (local_world_size() > 1)
      return shared_image_folder_listing(d.root, val_folder, d.cache_dir, list);
    return list();
  }
  if (d.dataset == DatasetKind::kTinyImagenet) return list_tiny_imagenet(d.root);
  return std::nullopt;
}

StreamedSplit limited(StreamedSplit split, int64_t limit, uint64_t seed) {
  if (limit <= 0 || limit >= split.size()) return split;
  return split.subset(
      stratified_pick(split.label_tensor(), split.num_classes(), limit, seed).picked);
}

// Class names of WebDataset shards: root/classes.txt (one a line) when there
// is one, else "0" .. "K-1".
std::vector<std::string> shard_classes(const std::filesystem::path& root, int64_t num_classes) {
  const auto file = root / "classes.txt";
  std::vector<std::string> classes;
  std::ifstream in(file);
  if (!in) {
    for (int64_t k = 0; k < num_classes; ++k)
      classes.push_back(std::to_string(k));
    return classes;
  }
  for (std::string line; std::getline(in, line);) {
    while (!line.empty() && (line.back() == '\r' || line.back() == ' '))
      line.pop_back();
    if (!line.empty()) classes.push_back(line);
  }
  if (static_cast<int64_t>(classes.size()) != num_classes)
    throw Error(file.string() + ": " + std::to_string(classes.size()) +
                " class names, but model.num_classes is " + std::to_string(num_classes));
  return classes;
}

StreamedSplit shard_split(const Config& config, const std::string& pattern, const char* key,
                          const std::vector<std::string>& classes) {
  StreamedSplit split;
  split.classes = classes;
  split.source = std::string("webdataset ") + key + " " + pattern;
  if (pattern.empty()) return split;
  ShardOptions options;
  options.num_classes = config.model.num_classes;
  options.skip_corrupt = config.data.skip_corrupt;
  split.shards = shard_files(pattern, config.data.root, key);
  for (const auto& shard : split.shards)
    split.shard_samples.push_back(count_shard_samples(shard, options));
  return split;
}

StreamedSplits streamed_splits(const Config& config, std::optional<ImageListing> listing,
                               ValidationSource validation, std::string reason) {
  const auto& d = config.data;
  StreamedSplits out;
  out.reason = std::move(reason);
  if (d.dataset == DatasetKind::kWebdataset) {
    const auto classes = shard_classes(d.root, config.model.num_classes);
    out.train = shard_split(config, d.train_shards, "data.train_shards", classes);
    out.val = shard_split(config, d.val_shards, "data.val_shards", classes);
    out.test = shard_split(config, d.test_shards, "data.test_shards", classes);
    return out;
  }
  // One list per folder, shared by the splits cut from it.
  const std::string what = std::string(enum_name(d.dataset)) + " " + listing->root.string();
  auto official =
      StreamedSplit::of_files(std::make_shared<const FileList>(std::move(listing->train)),
                              listing->classes, what + " (training files)");
  auto evaluation = StreamedSplit::of_files(
      std::make_shared<const FileList>(std::move(listing->evaluation)), listing->classes,
      what + (validation == ValidationSource::kFolder ? " (val/)" : " (test files)"));
  if (validation == ValidationSource::kFolder) {
    out.val = std::move(evaluation);
    out.train =
        limited(std::move(official), d.limit_train, stream_seed(config.seed, kLimitTrainStream));
    out.test = StreamedSplit::of_files(std::make_shared<const FileList>(listing->classes.size()),
                                       listing->classes, what + " (no test split)");
    return out;
  }
  const int64_t n_train = official.size();
  if (d.val_size >= n_train)
    throw Error("data.val_size " + std::to_string(d.val_size) + " leaves no training images (" +
                enum_name(d.dataset) + std::string(" has ") + std::to_string(n_train) + ")");
  const auto held_out = stratified_pick(official.label_tensor(), official.num_classes(), d.val_size,
                                        stream_seed(config.seed, kValStream));
  out.val = official.subset(held_out.picked);
  out.train = limited(official.subset(held_out.rest), d.limit_train,
                      stream_seed(config.seed, kLimitTrainStream));
  out.test =
      limited(std::move(evaluation), d.limit_test, stream_seed(config.seed, kLimitTestStream));
  return out;
}

DataSplits in_memory_splits(const Config& config, DatasetPair official,
                            ValidationSource validation) {
  const auto& d = config.data;
  const auto& m = config.model;
  DataSplits out;
  if (validation == ValidationSource::kFolder) {
    // The dataset's second folder is val/: it validates, and there is no test split.
    out.val = conform(official.test, m.channels, m.image_size);
    out.train =
        conform(limited(official.train, d.limit_train, stream_seed(config.seed, kLimitTrainStream)),
                m.channels, m.image_size);
    out.test =
        conform(official.test.subset(torch::empty({0}, torch::kInt64)), m.channels, m.image_size);
    return out;
  }
  const int64_t classes = official.train.num_classes();
  const int64_t n_train = official.train.size();
  if (d.val_size >= n_train) {
    throw Error("data.val_size " + std::to_string(d.val_size) + " leaves no training images (" +
                enum_name(d.dataset) + std::string(" has ") + std::to_string(n_train) + ")");
  }
  const auto held_out = stratified_pick(official.train.labels, classes, d.val_size,
                                        stream_seed(config.seed, kValStream));
  out.val = conform(official.train.subset(held_out.picked), m.channels, m.image_size);
  out.train = conform(limited(official.train.subset(held_out.rest), d.limit_train,
                              stream_seed(config.seed, kLimitTrainStream)),
                      m.channels, m.image_size);
  out.test =
      conform(limited(official.test, d.limit_test, stream_seed(config.seed, kLimitTestStream)),
              m.channels, m.image_size);
  return out;
}

std::string with_commas(int64_t n) {
  std::string digits = std::to_string(n), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

// A size in MiB for the log: one decimal under 100 MiB.
std::string mib_text(int64_t bytes) {
  const double mib = double(bytes) / double(kBytesPerMiB);
  if (mib < 100) return fmt::format("{:.1f}", mib);
  return with_commas(static_cast<int64_t>(mib));
}

}  // namespace

// "auto" streams for webdataset, for a random resized crop or an evaluation
// transform other than the in-memory squash (they need the original images),
// and for an image folder or Tiny-ImageNet whose decoded images would exceed
// data.memory_budget_mb (0: a quarter of the machine's memory).
StreamChoice choose_stream(const Config& config, int64_t listed_images) {
  const auto& d = config.data;
  if (d.dataset == DatasetKind::kWebdataset) return {true, "webdataset shards are always streamed"};
  if (d.augment.random_resized_crop) {
    if (!can_stream(d.dataset))
      throw Error(
          "data.augment.random_resized_crop needs images read file by file (image-folder, "
          "tiny-imagenet or webdataset); " +
          std::string(enum_name(d.dataset)) + " is read into memory whole");
    return {true, "data.augment.random_resized_crop crops the original images"};
  }
  if (const EvaluationTransform evaluation = evaluation_transform(d);
      can_stream(d.dataset) && needs_original_images(evaluation)) {
    const std::string what = "data.crop_mode " + std::string(enum_name(evaluation.mode)) +
                             " (crop_pct " + fmt::format("{}", evaluation.crop_pct) +
                             ") and data.interpolation " + enum_name(d.interpolation) +
                             " resize the original images";
    if (d.stream == StreamMode::kOff)
      throw Error(what + ", which only the streamed path reads; data.stream is false");
    return {true, what};
  }
  if (d.stream == StreamMode::kOn) {
    if (!can_stream(d.dataset))
      throw Error("data.stream is true, but " + std::string(enum_name(d.dataset)) +
                  " is read into memory whole; image-folder, tiny-imagenet and webdataset stream");
    return {true, "data.stream is true"};
  }
  if (d.stream == StreamMode::kOff || !can_stream(d.dataset)) return {false, ""};
  const int64_t bytes =
      listed_images * config.model.channels * config.model.image_size * config.model.image_size;
  const int64_t budget =
      d.memory_budget_mb > 0 ? d.memory_budget_mb * kBytesPerMiB : default_memory_budget_bytes();
  if (bytes <= budget) return {false, ""};
  return {true, "its " + with_commas(listed_images) + " images would take " + mib_text(bytes) +
                    " MiB decoded, over data.memory_budget_mb " + mib_text(budget) + " MiB"};
}

namespace {

// model.num_classes against the classes the dataset has.
void check_class_count(const Config& config, int64_t classes) {
  if (classes == config.model.num_classes) return;
  throw Error("model.num_classes is " + std::to_string(config.model.num_classes) + " but " +
              std::string(enum_name(config.data.dataset)) + " has " + std::to_string(classes) +
              " classes");
}

}  // namespace

ValidationSource validation_source(const DataConfig& data) {
  if (data.dataset != DatasetKind::kImageFolder) return ValidationSource::kHoldout;
  if (data.validation != ValidationSource::kAuto) return data.validation;
  const std::filesystem::path root = data.root;
  std::error_code ec;
  const auto folder = [&](const char* name) {
    return std::filesystem::is_directory(root / name, ec);
  };
  return folder("train") && folder("val") && !folder("test") ? ValidationSource::kFolder
                                                             : ValidationSource::kHoldout;
}

// The limits take a seeded stratified subset, not the first N: some layouts are
// sorted by class.
DataSplits load_data(const Config& config) {
  const auto start = std::chrono::steady_clock::now();
  const auto& d = config.data;
  const auto& m = config.model;
  const auto seconds = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  const ValidationSource validation = validation_source(d);
  auto listing = listing_of(config, validation);
  if (listing) check_class_count(config, static_cast<int64_t>(listing->classes.size()));
  const int64_t listed = listing ? listing->train.size() + listing->evaluation.size() : 0;
  const StreamChoice choice = choose_stream(config, listed);
  // The list's heap bytes; a list shared by the ranks is mapped, off the heap.
  const int64_t list_bytes = listing ? listing->train.bytes() + listing->evaluation.bytes() : 0;
  const bool has_list = listing.has_value();
  const bool list_mapped = has_list && listing->train.is_mapped();
  DataSplits out;
  if (choice.stream) {
    out.streamed = streamed_splits(config, std::move(listing), validation, choice.reason);
    check_class_count(config, out.streamed->train.num_classes());
  } else {
    DatasetPair official;
    if (listing) {
      ImageLoadOptions options;
      options.skip_corrupt = d.skip_corrupt;
      options.cache_dir = d.cache_dir;
      official = load_listing(*listing, options);
    } else {
      official = read_dataset(d, m, config.seed);
    }
    check_class_count(config, official.train.num_classes());
    out = in_memory_splits(config, std::move(official), validation);
  }
  out.validation = validation;
  out.mean = d.mean;
  out.std = d.std;
  if (choice.stream) {
    spdlog::info(
        "{}: {} train, {} val, {} test images, streamed: read and decoded every epoch "
        "({}); listed in {:.1f} s{}",
        enum_name(d.dataset), with_commas(out.train_size()), with_commas(out.val_size()),
        with_commas(out.test_size()), choice.reason, seconds(),
        has_list ? "; the file list takes " + mib_text(list_bytes) + " MiB of heap" +
                       (list_mapped ? " (its names and labels mapped, shared by this machine's "
                                      "ranks)"
                                    : "")
                 : std::string());
  } else {
    spdlog::info("{}: {} train, {} val, {} test images of {}x{}x{} in {:.1f} s",
                 enum_name(d.dataset), out.train.size(), out.val.size(), out.test.size(),
                 m.channels, m.image_size, m.image_size, seconds());
  }
  return out;
}

}  // namespace vit::data
