#pragma once
// Batches read from disk every epoch: the images of a StreamedSplit (files or
// WebDataset shards) are decoded, cropped and flipped on a pool of threads, a
// few batches ahead of the trainer. On CUDA they are handed over as uint8
// batches in pinned memory, copied without blocking, and normalised on the
// GPU; on the CPU the workers normalise too, unless the batch stage needs the
// pixels. RandAugment, mixup/CutMix and random erasing run on the whole
// batch, on the device, as in the in-memory path (data/batch_loader).
//
// - Memory is bounded by the batches in flight (data.prefetch_batches, and
//   for shards data.shuffle_buffer encoded samples, at most
//   data.shuffle_buffer_mb of them), not by the dataset.
// - Deterministic: the order (files: data/epoch_order, the in-memory path's;
//   shards: the epoch's shard order and shuffle buffer), each image's crop
//   and each batch's augmentation are pure functions of the seed, the epoch
//   and the position, whatever the number of workers.
// - Any (epoch, step) can be asked for: a resumed run restarts the stream
//   there (a shard stream reads, without decoding, up to that sample).
// - Under torchrun (training): files: each rank decodes its rows of every
//   global batch, as the in-memory path keeps them, so each image is read
//   once per epoch across the ranks; shards: each rank reads whole shards
//   (balanced by their sample counts), and an epoch is as many steps as the
//   rank with the fewest samples fills, or keeping the last batch
//   (data.drop_last false) the most, the others repeating samples.
// Key: B images, C channels, S x S pixels.
#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>

#include "vit/config.hpp"
#include "vit/data/batch_loader.hpp"
#include "vit/data/batch_source.hpp"
#include "vit/data/streamed_split.hpp"
#include "vit/io/planned_decode.hpp"

namespace vit::data {

struct StreamSettings {
  int64_t channels = 3;  // the model's input: C x S x S
  int64_t side = 224;
  // Training's crop of the original image; unset: the image is squashed to
  // S x S and data.augment.crop_padding crops it, as in the in-memory path.
  std::optional<RandomResizedCrop> random_resized_crop;
  // Evaluation with a random_resized_crop: the shorter side to
  // floor(S / crop_pct), then the centre S x S (unset: squashed to S x S).
  double crop_pct = 0.875;
  int64_t workers = 0;            // decode threads; 0 = one per core
  int64_t prefetch_batches = 0;   // decoded batches held ahead; 0 = 2 on the CPU, 4 on CUDA
  int64_t shuffle_buffer = 2000;  // shards, training: samples shuffled together
  int64_t shuffle_buffer_bytes = int64_t{1024} << 20;  // and at most these bytes of them
  bool skip_corrupt =
      false;  // an image that fails takes its batch neighbour's place, with a warning
  int64_t max_member_bytes = 64 << 20;  // shards: a larger member is refused
};

// The stream settings a config asks for (data.*, the model's size).
StreamSettings stream_settings(const Config& config);

// How evaluation takes an image of H x W (no randomness): timm's resize and
// centre crop where training crops at random, else the in-memory path's squash.
io::CropResizePlan evaluation_plan(const StreamSettings& settings, int64_t height, int64_t width);

class StreamLoader : public BatchSource {
 public:
  // Checks the options (batch size, the shards of a sharded run) and the
  // split; reads nothing until the first batch is asked for.
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

  // This process's images of a step of batch size B (its rows of the global
  // batch when training under torchrun).
  int64_t local_batch_size() const { return local_batch_; }

  // The shuffle buffer's bytes, now and at most, kept by the pass that fills
  // it (atomics: the planner thread writes, the trainer's thread reads).
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
