#include "vit/data/loader.hpp"

#include <numeric>

#include <torch/torch.h>

#include "vit/data/augment.hpp"
#include "vit/data/rng.hpp"
#include "vit/device.hpp"
#include "vit/error.hpp"

namespace vit::data {

namespace {

// Stream tags, so the shuffle and the augmentation never share draws.
constexpr uint64_t kShuffleStream = 1;
constexpr uint64_t kAugmentStream = 2;

std::vector<double> per_channel(const std::vector<double>& values, int64_t channels,
                                const char* name) {
  if (static_cast<int64_t>(values.size()) == channels) return values;
  if (values.size() == 1) return std::vector<double>(channels, values.front());
  // One value serves every channel, so gray images take 1 and RGB 1 or 3.
  const std::string expected =
      channels == 1 ? "1 value" : "1 or " + std::to_string(channels) + " values";
  throw Error(std::string("data.") + name + ": " + std::to_string(values.size()) + " values for " +
              std::to_string(channels) + "-channel images, expected " + expected);
}

}  // namespace

LoaderOptions loader_options(const Config& config, c10::Device device, bool train) {
  const auto& t = config.train;
  LoaderOptions o;
  o.batch_size =
      train ? t.batch_size : (t.eval_batch_size > 0 ? t.eval_batch_size : 2 * t.batch_size);
  o.train = train;
  o.seed = config.seed;
  o.device = device;
  o.mean = config.data.mean;
  o.std = config.data.std;
  o.augment = config.data.augment;
  return o;
}

BatchLoader::BatchLoader(const Dataset& data, LoaderOptions options)
    : options_(std::move(options)) {
  if (options_.batch_size <= 0) {
    throw Error("batch loader: batch size " + std::to_string(options_.batch_size) +
                " is not positive");
  }
  if (!data.images.defined() || !data.labels.defined() || data.images.dim() != 4 ||
      data.labels.size(0) != data.images.size(0)) {
    throw Error("batch loader: expected uint8 (N, C, H, W) images with N labels, got " +
                (data.images.defined() ? c10::str(data.images.sizes()) : std::string("no images")) +
                " from " + (data.source.empty() ? "an unnamed dataset" : data.source));
  }
  if (options_.shard_count < 1 || options_.shard_index < 0 ||
      options_.shard_index >= options_.shard_count || (!options_.train && options_.shard_count > 1))
    throw Error("batch loader: shard " + std::to_string(options_.shard_index) + " of " +
                std::to_string(options_.shard_count) +
                " is not valid (training loaders only, 0 <= index < count)");
  if (options_.batch_size % options_.shard_count != 0)
    throw Error("train.batch_size " + std::to_string(options_.batch_size) +
                " is not divisible by the " + std::to_string(options_.shard_count) +
                " ranks (WORLD_SIZE): train.batch_size is the global batch, which the ranks "
                "split evenly");
  images_ = data.images.to(options_.device).contiguous();
  labels_ = data.labels.to(options_.device);
  num_classes_ = data.num_classes();
  const int64_t channels = data.images.size(1);
  const auto mean = per_channel(options_.mean, channels, "mean");
  const auto std = per_channel(options_.std, channels, "std");
  std::vector<double> scale(channels), shift(channels);
  for (int64_t c = 0; c < channels; ++c) {
    if (!(std[c] > 0.0))
      throw Error("data.std: value " + std::to_string(std[c]) + " is not positive");
    scale[c] = 1.0 / (255.0 * std[c]);
    shift[c] = mean[c] / std[c];
  }
  const auto opts = torch::TensorOptions().dtype(torch::kFloat32).device(options_.device);
  scale_ = torch::tensor(scale, torch::kFloat64).to(opts).view({1, channels, 1, 1});
  shift_ = torch::tensor(shift, torch::kFloat64).to(opts).view({1, channels, 1, 1});
}

int64_t BatchLoader::batches_per_epoch() const {
  const int64_t b = options_.batch_size;
  return options_.train ? size() / b : (size() + b - 1) / b;
}

at::Tensor BatchLoader::order(int64_t epoch) const {
  std::vector<int64_t> order(size());
  std::iota(order.begin(), order.end(), 0);
  if (options_.train) {
    Rng rng = Rng::derive({options_.seed, kShuffleStream, static_cast<uint64_t>(epoch)});
    for (int64_t i = size() - 1; i > 0; --i) {
      std::swap(order[i], order[rng.below(static_cast<uint64_t>(i) + 1)]);
    }
  }
  return torch::tensor(order, torch::kInt64).view({size()});
}

const at::Tensor& BatchLoader::cached_order(int64_t epoch) const {
  if (epoch != order_epoch_) {
    order_ = to_device(order(epoch), options_.device);
    order_epoch_ = epoch;
  }
  return order_;
}

Batch BatchLoader::assemble(int64_t epoch, int64_t step) const {
  if (step < 0 || step >= batches_per_epoch()) {
    throw Error("batch loader: step " + std::to_string(step) + " is outside 0.." +
                std::to_string(batches_per_epoch() - 1) + " of an epoch");
  }
  const int64_t begin = step * options_.batch_size;
  const int64_t end = std::min(begin + options_.batch_size, size());
  const auto index = cached_order(epoch).slice(0, begin, end);
  Batch out;
  out.labels = labels_.index_select(0, index);
  const auto images = images_.index_select(0, index);  // uint8 (B, C, S, S)
  if (!options_.train) {
    out.images = images;
    return out;
  }
  Rng rng = Rng::derive(
      {options_.seed, kAugmentStream, static_cast<uint64_t>(epoch), static_cast<uint64_t>(step)});
  auto augmented = augment_batch(images, out.labels, num_classes_, options_.augment, rng);
  out.images = std::move(augmented.images);
  out.targets = std::move(augmented.targets);
  return shard(std::move(out));
}

Batch BatchLoader::shard(Batch batch) const {
  if (options_.shard_count == 1) return batch;
  const int64_t b = batch.labels.size(0);
  const int64_t begin = b * options_.shard_index / options_.shard_count;
  const int64_t end = b * (options_.shard_index + 1) / options_.shard_count;
  batch.labels = batch.labels.slice(/*dim=*/0, begin, end);
  batch.images = batch.images.slice(/*dim=*/0, begin, end);
  if (batch.targets.defined()) batch.targets = batch.targets.slice(/*dim=*/0, begin, end);
  return batch;
}

Batch BatchLoader::batch(int64_t epoch, int64_t step) const {
  Batch out = assemble(epoch, step);
  out.images = normalize(out.images);
  return out;
}

Batch BatchLoader::batch_unnormalized(int64_t epoch, int64_t step) const {
  Batch out = assemble(epoch, step);
  if (!out.images.is_floating_point()) out.images = out.images.to(torch::kFloat32).div_(255.0);
  return out;
}

at::Tensor BatchLoader::normalize(const at::Tensor& images) const {
  // uint8 pixels p: (p / 255 - mean) / std = p * scale - shift.
  if (images.scalar_type() == torch::kUInt8) {
    return images.to(torch::kFloat32).mul_(scale_).sub_(shift_);
  }
  return images.mul(scale_ * 255.0).sub_(shift_);
}

}  // namespace vit::data
