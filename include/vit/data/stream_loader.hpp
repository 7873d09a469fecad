#pragma once
// Batches read from disk every epoch (docs/data.md): the images of a StreamedSplit
// (files or WebDataset shards) are decoded, cropped and flipped on a pool of threads,
// a few batches ahead of the trainer; the batch-wide augmentations then run on the
// device, as in the in-memory path (data/batch_loader).
// - Memory is bounded by the batches in flight and the shards' shuffle buffer, not
//   by the dataset.
// - Deterministic: the order, each image's crop and each batch's augmentation are
//   pure functions of the seed, the epoch and the position, whatever the workers.
// - Any (epoch, step) can be asked for: a resumed run restarts the stream there.
// - Under torchrun (training): files: each rank decodes its rows of every global
//   batch; shards: each rank reads whole shards, balanced by their sample counts.
//   What an epoch covers: docs/distributed.md (data.drop_last).
// Key: B images, C channels, S x S pixels.
#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>

#include "vit/config.hpp"
#include "vit/data/batch_loader.hpp"
#include "vit/data/batch_source.hpp"
#include "vit/data/image_transform.hpp"
#include "vit/data/streamed_split.hpp"
#include "vit/io/planned_decode.hpp"

namespace vit::data {

struct StreamSettings {
  int64_t channels = 3;  // the model's input: C x S x S
  int64_t side = 224;
  // Unset: the image is squashed to S x S, then crop_padding crops it in training.
  std::optional<RandomResizedCrop> random_resized_crop;
  EvaluationTransform evaluation;  // validation and test
  int64_t workers = 0;             // decode threads; 0 = one per core
  int64_t prefetch_batches = 0;    // decoded batches held ahead; 0 = 2 on the CPU, 4 on CUDA
  int64_t shuffle_buffer = 2000;   // shards, training: samples shuffled together
  int64_t shuffle_buffer_bytes = int64_t{1024} << 20;  // and at most these bytes of them
  bool skip_corrupt =
      false;  // an image that fails takes its batch neighbour's place, with a warning
  int64_t max_member_bytes = 64 << 20;  // shards: a larger member is refused
};

// The stream settings a config asks for (data.*, the model's size).
StreamSettings stream_settings(const Config& config);

// How evaluation takes an H x W image (data/image_transform's evaluation_plan).
io::CropResizePlan evaluation_plan(const StreamSettings& settings, int64_t height, int64_t width);

class StreamLoader : public BatchSource {
 public:
  // Checks the options and the split; reads nothing until the first batch.
  StreamLoader(StreamedSplit split, LoaderOptions options, StreamSettings settings);
  ~StreamLoader() override;
  StreamLoader(const StreamLoader&) = delete;
  StreamLoader& operator=(const StreamLoader&) = delete;

  const LoaderOptions& options() const override { return options_; }
  int64_t batches_per_epoch() const override { return batches_per_epoch_; }
  int64_t size() const override { return size_; }
  int64_t batch_rows(int64_t step) const override;
  Batch batch(int64_t epoch, int64_t step) const override;
  Batch batch_unnormalized(int64_t epoch, int64_t step) const override;
  std::optional<PipelineBytes> pipeline_bytes() const override;

  // This process's images of a step (its rows of the global batch under torchrun).
  int64_t local_batch_size() const { return local_batch_; }

  // The shuffle buffer's bytes, now and at most (the planner thread writes them).
  struct BufferBytes {
    std::atomic<int64_t> now{0}, peak{0};
    void add(int64_t bytes);
  };

 private:
  class Pipeline;  // the threads of one pass over the stream, from a position
  struct Ready;    // a decoded batch, uint8 on the CPU
  Ready next_ready(int64_t epoch, int64_t step) const;
  Batch assemble(int64_t epoch, int64_t step) const;
  void plan_files();
  void plan_shards();

  StreamedSplit split_;
  LoaderOptions options_;
  StreamSettings settings_;
  std::vector<size_t> my_shards_;  // shards, training: the indices this rank reads
  int64_t my_samples_ = 0;         // shards, training: the samples of my_shards_
  // The entries of a training epoch's order: files, all ranks' (padded to a
  // multiple of the ranks where the last batch is kept); shards, this rank's
  // (padded by repeats to the most any rank has where the last batch is kept).
  int64_t epoch_rows_ = 0;
  int64_t local_batch_ = 0;
  int64_t batches_per_epoch_ = 0;
  int64_t size_ = 0;
  int64_t num_classes_ = 0;
  bool normalize_in_workers_ = false;  // the CPU's batches come normalised (float) from the workers
  std::shared_ptr<const class Normalizer> normalizer_;
  mutable BufferBytes shuffle_bytes_;
  // The running pass; replaced when a batch other than its next is asked for.
  mutable std::unique_ptr<Pipeline> pipeline_;
};

}  // namespace vit::data
