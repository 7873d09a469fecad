#pragma once
// What the trainer and the evaluation read batches from: the in-memory
// BatchLoader (data/batch_loader.hpp) or the StreamLoader, which reads and decodes
// the images every epoch (data/stream_loader.hpp).
// Key: B images, C channels, S x S pixels, K classes.
#include <cstdint>
#include <optional>

#include <ATen/core/Tensor.h>

namespace vit::data {

struct LoaderOptions;

struct Batch {
  at::Tensor images;   // float (B, C, S, S), normalised, on the device
  at::Tensor labels;   // int64 (B), on the device
  at::Tensor targets;  // float (B, K) soft targets when mixup/cutmix is on; else undefined
};

// What a streaming source holds between batches, in bytes.
struct PipelineBytes {
  int64_t batches = 0;              // decoded batches: those ahead and the one handed out
  int64_t shuffle_buffer = 0;       // shards: encoded samples in the shuffle buffer now
  int64_t shuffle_buffer_peak = 0;  // and the most it has held
  int64_t shuffle_buffer_cap = 0;   // data.shuffle_buffer_mb (0: no shuffle buffer)
};

class BatchSource {
 public:
  virtual ~BatchSource() = default;

  virtual const LoaderOptions& options() const = 0;
  // Evaluation keeps the last partial batch; training where
  // options().drop_last is false.
  virtual int64_t batches_per_epoch() const = 0;
  // The images this process reads in batch `step`: fewer in an epoch's last
  // batch where it is partial.
  virtual int64_t batch_rows(int64_t step) const = 0;
  // The images an epoch reads in this process (its share under torchrun).
  virtual int64_t size() const = 0;

  // Batch `step` (0-based) of epoch `epoch`. The same (epoch, step) gives the
  // same batch however it is asked for. A stream is fastest read in order
  // (it decodes ahead); asking for another position restarts it there.
  virtual Batch batch(int64_t epoch, int64_t step) const = 0;
  // The same images in [0, 1] before normalisation (for looking at them).
  virtual Batch batch_unnormalized(int64_t epoch, int64_t step) const = 0;
  // What a stream holds between batches; nullopt for images in memory, which
  // are the dataset rather than a pipeline.
  virtual std::optional<PipelineBytes> pipeline_bytes() const { return std::nullopt; }
};

}  // namespace vit::data
