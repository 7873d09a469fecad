#include "vit/data/load.hpp"

#include <chrono>

#include <spdlog/spdlog.h>
#include <torch/torch.h>

#include "vit/data/cifar.hpp"
#include "vit/data/idx.hpp"
#include "vit/data/image_folder.hpp"
#include "vit/data/rng.hpp"
#include "vit/data/split.hpp"
#include "vit/data/synthetic.hpp"
#include "vit/data/tiny_imagenet.hpp"
#include "vit/error.hpp"
#include "vit/io/image_io.hpp"

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

DataSplits load_data(const Config& config) {
  const auto start = std::chrono::steady_clock::now();
  const auto& d = config.data;
  const auto& m = config.model;
  DatasetPair official = read_dataset(d, m, config.seed);
  const int64_t classes = official.train.num_classes();
  if (classes != m.num_classes) {
    throw Error("model.num_classes is " + std::to_string(m.num_classes) + " but " +
                std::string(name_of(d.dataset)) + " has " + std::to_string(classes) + " classes");
  }
  const int64_t n_train = official.train.size();
  if (d.val_size >= n_train) {
    throw Error("data.val_size " + std::to_string(d.val_size) + " leaves no training images (" +
                name_of(d.dataset) + std::string(" has ") + std::to_string(n_train) + ")");
  }
  const auto held_out = stratified_pick(official.train.labels, classes, d.val_size,
                                        stream_seed(config.seed, kValStream));

  DataSplits out;
  out.val = conform(official.train.subset(held_out.picked), m.channels, m.image_size);
  out.train = conform(limited(official.train.subset(held_out.rest), d.limit_train,
                              stream_seed(config.seed, kLimitTrainStream)),
                      m.channels, m.image_size);
  out.test =
      conform(limited(official.test, d.limit_test, stream_seed(config.seed, kLimitTestStream)),
              m.channels, m.image_size);
  out.mean = d.mean;
  out.std = d.std;
  spdlog::info("{}: {} train, {} val, {} test images of {}x{}x{} in {:.1f} s", name_of(d.dataset),
               out.train.size(), out.val.size(), out.test.size(), m.channels, m.image_size,
               m.image_size,
               std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  return out;
}

}  // namespace vit::data
