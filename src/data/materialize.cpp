#include "vit/data/materialize.hpp"

#include <algorithm>
#include <map>
#include <numeric>

#include <torch/torch.h>

#include "vit/data/batch_loader.hpp"
#include "vit/data/rng.hpp"
#include "vit/data/stream_loader.hpp"
#include "vit/data/webdataset.hpp"
#include "vit/error.hpp"
#include "vit/io/image_io.hpp"
#include "vit/io/planned_decode.hpp"

namespace vit::data {
namespace {

constexpr int64_t kMaterializeBatch = 256;
constexpr uint64_t kSampleStream = 41;

// Every image of `split` through an evaluation stream loader, in order.
Dataset decode_all(const StreamedSplit& split, const Config& config) {
  LoaderOptions options = loader_options(config, c10::kCPU, /*train=*/false);
  options.batch_size = kMaterializeBatch;
  Dataset out;
  out.classes = split.classes;
  out.source = split.source;
  std::vector<at::Tensor> images, labels;
  if (split.size() > 0) {
    StreamLoader loader(split, options, stream_settings(config));
    for (int64_t step = 0; step < loader.batches_per_epoch(); ++step) {
      Batch batch = loader.batch_unnormalized(/*epoch=*/0, step);
      images.push_back(io::to_uint8(batch.images));
      labels.push_back(batch.labels);
    }
  }
  const auto& m = config.model;
  out.images = images.empty()
                   ? torch::empty({0, m.channels, m.image_size, m.image_size}, torch::kUInt8)
                   : torch::cat(images);
  out.labels = labels.empty() ? torch::empty({0}, torch::kInt64) : torch::cat(labels);
  return out;
}

// The first `count` samples of a shard split, as a split of their own
// (positions beyond are never read).
StreamedSplit first_shards(const StreamedSplit& split, int64_t count) {
  StreamedSplit out = split;
  out.shards.clear();
  out.shard_samples.clear();
  for (size_t s = 0; s < split.shards.size() && count > 0; ++s) {
    out.shards.push_back(split.shards[s]);
    out.shard_samples.push_back(std::min(count, split.shard_samples[s]));
    count -= split.shard_samples[s];
  }
  return out;
}

}  // namespace

Dataset materialize(const StreamedSplit& split, const Config& config, int64_t limit) {
  const int64_t n = limit > 0 ? std::min(limit, split.size()) : split.size();
  if (split.from_shards()) {
    Dataset all = decode_all(first_shards(split, n), config);
    return n < all.size() ? all.subset(torch::arange(n, torch::kInt64)) : all;
  }
  return decode_all(split.subset(torch::arange(n, torch::kInt64)), config);
}

Dataset materialize_sample(const StreamedSplit& split, const Config& config, int64_t count) {
  const int64_t n = split.size();
  if (split.from_shards() || count >= n) return materialize(split, config, count);
  std::vector<int64_t> all(static_cast<size_t>(n));
  std::iota(all.begin(), all.end(), 0);
  Rng rng = Rng::derive({config.seed, kSampleStream});
  for (int64_t i = 0; i < count; ++i)  // a partial Fisher-Yates shuffle
    std::swap(all[i], all[i + static_cast<int64_t>(rng.below(static_cast<uint64_t>(n - i)))]);
  all.resize(static_cast<size_t>(std::max<int64_t>(count, 0)));
  std::sort(all.begin(), all.end());
  return materialize_at(split, config, all);
}

Dataset materialize_at(const StreamedSplit& split, const Config& config,
                       const std::vector<int64_t>& positions) {
  for (const int64_t p : positions)
    if (p < 0 || p >= split.size())
      throw Error(split.source + ": image " + std::to_string(p) + " of " +
                  std::to_string(split.size()));
  if (!split.from_shards())
    return decode_all(split.subset(torch::tensor(positions, torch::kInt64)), config);
  // Shards: read in order up to the last position wanted, decode the wanted.
  std::multimap<int64_t, int64_t> wanted;  // position -> row of the result
  for (size_t row = 0; row < positions.size(); ++row)
    wanted.emplace(positions[row], static_cast<int64_t>(row));
  const auto& m = config.model;
  Dataset out;
  out.classes = split.classes;
  out.source = split.source;
  out.images = torch::empty({int64_t(positions.size()), m.channels, m.image_size, m.image_size},
                            torch::kUInt8);
  out.labels = torch::empty({int64_t(positions.size())}, torch::kInt64);
  ShardOptions options;
  options.num_classes = m.num_classes;
  options.skip_corrupt = config.data.skip_corrupt;
  const StreamSettings settings = stream_settings(config);
  const io::PlanForSize plan = [&](int64_t h, int64_t w) {
    return evaluation_plan(settings, h, w);
  };
  int64_t position = 0;
  for (const auto& shard : split.shards) {
    if (wanted.empty() || position > wanted.rbegin()->first) break;
    ShardReader reader(shard, options);
    while (auto sample = reader.next()) {
      const auto [first, last] = wanted.equal_range(position++);
      if (first == last) continue;
      const auto image = io::decode_planned(sample->image.data(), sample->image.size(), m.channels,
                                            plan, shard.string() + ":" + sample->key);
      for (auto row = first; row != last; ++row) {
        out.images[row->second].copy_(image);
        out.labels[row->second] = sample->label;
      }
    }
  }
  return out;
}

}  // namespace vit::data
