#include "vit/data/batch_loader.hpp"

#include <numeric>

#include <torch/torch.h>

#include "vit/data/augment.hpp"
#include "vit/data/epoch_order.hpp"
#include "vit/data/normalizer.hpp"
#include "vit/data/random_erasing.hpp"
#include "vit/data/rng.hpp"
#include "vit/device.hpp"
#include "vit/error.hpp"

namespace vit::data {

namespace {

// The batch augmentation's stream tags (data/epoch_order's shuffle is 1).
constexpr uint64_t kAugmentStream = 2;
constexpr uint64_t kErasingStream = 3;

}  // namespace

LoaderOptions loader_options(const Config& config, c10::Device device, bool train) {
  const auto& t = config.train;
  LoaderOptions o;
  o.batch_size =
      train ? t.batch_size : (t.eval_batch_size > 0 ? t.eval_batch_size : 2 * t.batch_size);
  o.train = train;
  o.drop_last = train && config.data.drop_last;
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
  normalizer_ = std::make_unique<Normalizer>(options_.mean, options_.std, data.images.size(1),
                                             options_.device);
}

int64_t BatchLoader::batches_per_epoch() const {
  return epoch_batches(order_length(), options_.batch_size, options_.train && options_.drop_last);
}

int64_t BatchLoader::batch_rows(int64_t step) const {
  const int64_t b = options_.batch_size;
  const int64_t rows = std::min(b, order_length() - step * b);
  return options_.train ? rows / options_.shard_count : rows;
}

int64_t epoch_order_length(int64_t n, const LoaderOptions& options) {
  const bool pads = options.train && !options.drop_last && options.shard_count > 1;
  return pads ? padded_length(n, options.shard_count) : n;
}

int64_t BatchLoader::order_length() const {
  return epoch_order_length(size(), options_);
}

// A seeded Fisher-Yates shuffle when training, 0..N-1 otherwise.
at::Tensor BatchLoader::order(int64_t epoch) const {
  std::vector<int64_t> order(size());
  if (options_.train) {
    order = epoch_order(size(), options_.seed, epoch);
    if (order_length() > size()) order = padded_for_ranks(std::move(order), options_.shard_count);
  } else {
    std::iota(order.begin(), order.end(), 0);
  }
  return torch::tensor(order, torch::kInt64).view({order_length()});
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
  const int64_t end = std::min(begin + options_.batch_size, order_length());
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
  const auto [begin, end] =
      rank_rows(batch.labels.size(0), options_.shard_index, options_.shard_count);
  batch.labels = batch.labels.slice(/*dim=*/0, begin, end);
  batch.images = batch.images.slice(/*dim=*/0, begin, end);
  if (batch.targets.defined()) batch.targets = batch.targets.slice(/*dim=*/0, begin, end);
  return batch;
}

Batch BatchLoader::batch(int64_t epoch, int64_t step) const {
  Batch out = assemble(epoch, step);
  out.images = normalizer_->normalize(out.images);
  if (options_.train && options_.augment.random_erasing > 0) {
    Rng rng = Rng::derive(
        {options_.seed, kErasingStream, static_cast<uint64_t>(epoch), static_cast<uint64_t>(step)});
    // The global batch's rows: the last one of an epoch may be partial.
    const int64_t rows = out.labels.size(0) * options_.shard_count;
    out.images =
        random_erasing(out.images, options_.augment.random_erasing, rng,
                       rank_rows(rows, options_.shard_index, options_.shard_count).first, rows);
  }
  return out;
}

Batch BatchLoader::batch_unnormalized(int64_t epoch, int64_t step) const {
  Batch out = assemble(epoch, step);
  out.images = Normalizer::unit_range(out.images);
  return out;
}

}  // namespace vit::data
