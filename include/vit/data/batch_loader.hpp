#pragma once
// Batches for training and evaluation from a dataset in memory, augmented and
// normalised as whole batches on the device. The order and every augmentation draw
// are pure functions of (seed, epoch, step): a resumed run sees the same batches.
// Key: B images, C channels, S x S pixels, K classes.
#include <cstdint>
#include <memory>
#include <vector>

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

#include "vit/config.hpp"
#include "vit/data/batch_source.hpp"
#include "vit/data/dataset.hpp"

namespace vit::data {

class Normalizer;

struct LoaderOptions {
  int64_t batch_size = 128;
  bool train = true;               // shuffle and augment
  bool drop_last = true;           // training: leave the last partial batch out
  uint64_t seed = 0;               // with the epoch, fixes the order and augmentation
  c10::Device device = c10::kCPU;  // where batches are made and returned
  std::vector<double> mean;        // per channel (or one value for all), [0, 1] pixels
  std::vector<double> std;         // per channel (or one value for all)
  AugmentConfig augment;           // used when train is true
  // Training under data parallelism: every rank makes the global batch as one
  // process would and keeps its equal share of rows (data/epoch_order's rank_rows).
  int64_t shard_index = 0;
  int64_t shard_count = 1;
};

// The settings a config asks for: training's batch size and augmentation when
// `train`, else the evaluation batch size and none.
LoaderOptions loader_options(const Config& config, c10::Device device, bool train);

// The entries of an epoch's order of `n` images: `n`, padded to a multiple of
// the ranks where training keeps its last batch under torchrun
// (data/epoch_order's padded_for_ranks). Both batch sources follow it.
int64_t epoch_order_length(int64_t n, const LoaderOptions& options);

class BatchLoader : public BatchSource {
 public:
  // Copies the images to the device once. Throws if mean/std do not match the
  // channel count or the batch size is not positive.
  BatchLoader(const Dataset& data, LoaderOptions options);

  // Training leaves the last partial batch out where options().drop_last says.
  int64_t batches_per_epoch() const override;
  int64_t size() const override { return labels_.size(0); }
  int64_t batch_rows(int64_t step) const override;
  const LoaderOptions& options() const override { return options_; }

  // The indices epoch `epoch` visits, int64 (order_length()) on the CPU:
  // shuffled when training, and padded to a multiple of the ranks where
  // training keeps its last batch under torchrun (padded_for_ranks).
  at::Tensor order(int64_t epoch) const;
  int64_t order_length() const;

  // Any (epoch, step) in any order; this rank's slice of it when sharded.
  Batch batch(int64_t epoch, int64_t step) const override;

  // Augmented float images (B, C, S, S) in [0, 1] before normalisation.
  Batch batch_unnormalized(int64_t epoch, int64_t step) const override;

 private:
  const at::Tensor& cached_order(int64_t epoch) const;
  // The batch after augmentation: uint8 when only crop/flip ran, else float in [0, 1].
  Batch assemble(int64_t epoch, int64_t step) const;
  Batch shard(Batch batch) const;  // this rank's rows of a global batch

  LoaderOptions options_;
  at::Tensor images_;  // uint8 (N, C, S, S) on the device
  at::Tensor labels_;  // int64 (N) on the device
  int64_t num_classes_ = 0;
  std::shared_ptr<const Normalizer> normalizer_;
  mutable int64_t order_epoch_ = -1;  // the epoch whose order is in order_
  mutable at::Tensor order_;          // int64 (N) on the device
};

}  // namespace vit::data
