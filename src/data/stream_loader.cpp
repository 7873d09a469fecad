// On CUDA the batches are handed over as uint8 in pinned memory, copied without
// blocking, and normalised on the GPU; on the CPU the workers normalise too, unless
// the batch stage needs the pixels. Bounded memory: data.prefetch_batches, and for
// shards data.shuffle_buffer encoded samples, at most data.shuffle_buffer_mb of them.
// The order of files is data/epoch_order's, the in-memory path's; shards take the
// epoch's shard order and shuffle buffer. A resumed shard stream reads, without
// decoding, up to its sample. Under torchrun each rank decodes its rows of a global
// batch, as the in-memory path keeps them, so each image is read once per epoch
// across the ranks (twice for the few that pad a kept last batch).
#include "vit/data/stream_loader.hpp"

#include <algorithm>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <functional>
#include <mutex>
#include <numeric>
#include <thread>
#include <tuple>

#include <spdlog/spdlog.h>
#include <torch/torch.h>

#include "vit/data/augment.hpp"
#include "vit/data/epoch_order.hpp"
#include "vit/data/file_bytes.hpp"
#include "vit/data/image_transform.hpp"
#include "vit/data/mix.hpp"
#include "vit/data/normalizer.hpp"
#include "vit/data/random_erasing.hpp"
#include "vit/data/rng.hpp"
#include "vit/data/webdataset.hpp"
#include "vit/error.hpp"
#include "vit/io/planned_decode.hpp"

namespace vit::data {
// The pipeline's pieces; a named namespace, since StreamLoader::Pipeline
// (declared in the header) holds them.
namespace streaming {

// Stream tags beside data/epoch_order's shuffle (1) and the batch
// augmentation's (2, data/batch_loader), so no two purposes share draws.
constexpr uint64_t kStreamAugmentStream = 2;
constexpr uint64_t kStreamErasingStream = 3;
constexpr uint64_t kCropStream = 31;
constexpr uint64_t kShardOrderStream = 32;
constexpr uint64_t kShuffleBufferStream = 33;

// One image to decode: where its bytes are and its place in the epoch.
struct Item {
  int64_t position = 0;        // files: in the epoch's global order; shards: in this rank's stream
  int64_t file = -1;           // files: the index in the split
  std::vector<uint8_t> bytes;  // shards: the encoded image
  std::string name;            // shards: "SHARD:KEY", for errors
  int64_t label = 0;
};

// An epoch's items in order, for this process.
class ItemSequence {
 public:
  virtual ~ItemSequence() = default;
  // The next item; nullopt at the epoch's end.
  virtual std::optional<Item> next() = 0;
};

// Files: the positions of this rank's rows of each global batch, in the
// epoch's order (training), or every file in order (evaluation).
class FileSequence : public ItemSequence {
 public:
  // Batches of `batch` entries of `order` from `first_step` on, rank `rank`
  // of `ranks` taking its rows of each (data/epoch_order's rank_rows).
  FileSequence(const StreamedSplit& split, std::vector<int64_t> order, int64_t batch, int64_t rank,
               int64_t ranks, int64_t first_step, int64_t steps)
      : split_(split),
        order_(std::move(order)),
        batch_(batch),
        rank_(rank),
        ranks_(ranks),
        step_(first_step),
        steps_(steps) {
    start_step();
  }

  std::optional<Item> next() override {
    while (step_ < steps_) {
      if (row_ < row_end_) {
        const int64_t position = step_ * batch_ + row_++;
        Item item;
        item.position = position;
        item.file = order_[static_cast<size_t>(position)];
        item.label = split_.label(item.file);
        return item;
      }
      ++step_;
      start_step();
    }
    return std::nullopt;
  }

 private:
  void start_step() {
    const int64_t rows = std::min(batch_, static_cast<int64_t>(order_.size()) - step_ * batch_);
    std::tie(row_, row_end_) = rank_rows(std::max<int64_t>(rows, 0), rank_, ranks_);
  }

  const StreamedSplit& split_;
  std::vector<int64_t> order_;
  int64_t batch_, rank_, ranks_, step_, steps_;
  int64_t row_ = 0, row_end_ = 0;  // the step's rows left to this rank
};

// A training epoch's shard samples repeated from the start until `rows` have
// been read: a rank with fewer samples than another pads its epoch, so that
// the ranks keep in step (data.drop_last false). `make(skip)` opens the
// rank's sequence with its first `skip` samples passed over.
class RepeatingSequence : public ItemSequence {
 public:
  RepeatingSequence(std::function<std::unique_ptr<ItemSequence>(int64_t)> make, int64_t samples,
                    int64_t rows, int64_t skip)
      : make_(std::move(make)), samples_(samples), left_(rows - skip) {
    sequence_ = make_(samples_ > 0 ? skip % samples_ : 0);
  }

  std::optional<Item> next() override {
    if (left_ <= 0) return std::nullopt;
    auto item = sequence_->next();
    if (!item) {
      sequence_ = make_(0);
      item = sequence_->next();
      if (!item) return std::nullopt;
    }
    --left_;
    return item;
  }

 private:
  std::function<std::unique_ptr<ItemSequence>(int64_t)> make_;
  int64_t samples_, left_;
  std::unique_ptr<ItemSequence> sequence_;
};

// Shards: the samples of `shards` read in turn, through a shuffle buffer
// when `buffer` > 1 (training), the first `skip` of them passed over.
class ShardSequence : public ItemSequence {
 public:
  // `bytes` counts the buffer's encoded bytes for the loader's report.
  ShardSequence(std::vector<std::filesystem::path> shards, ShardOptions options, int64_t buffer,
                int64_t buffer_bytes, Rng rng, int64_t skip, StreamLoader::BufferBytes* bytes)
      : shards_(std::move(shards)),
        options_(options),
        buffer_size_(buffer),
        buffer_bytes_(buffer_bytes),
        rng_(rng),
        bytes_(bytes) {
    for (int64_t i = 0; i < skip && next(); ++i) {
    }
  }
  ~ShardSequence() override { bytes_->add(-held_); }

  std::optional<Item> next() override {
    if (buffer_size_ <= 1) return read();
    // Filled to shuffle_buffer samples, or until it holds buffer_bytes_:
    // a pure function of the shards, so a resumed stream fills it alike.
    while (static_cast<int64_t>(buffer_.size()) < buffer_size_ && held_ < buffer_bytes_) {
      auto item = read();
      if (!item) break;
      hold(static_cast<int64_t>(item->bytes.capacity()));
      buffer_.push_back(std::move(*item));
    }
    if (buffer_.empty()) return std::nullopt;
    // A random buffered sample leaves; the next one read takes its place.
    const auto pick = static_cast<size_t>(rng_.below(buffer_.size()));
    std::swap(buffer_[pick], buffer_.back());
    Item out = std::move(buffer_.back());
    buffer_.pop_back();
    hold(-static_cast<int64_t>(out.bytes.capacity()));
    out.position = emitted_++;
    return out;
  }

 private:
  std::optional<Item> read() {
    while (true) {
      if (!reader_) {
        if (shard_ >= shards_.size()) return std::nullopt;
        reader_ = std::make_unique<ShardReader>(shards_[shard_++], options_);
      }
      if (auto sample = reader_->next()) {
        Item item;
        item.position = emitted_;
        item.name = reader_->path().string() + ":" + sample->key;
        item.bytes = std::move(sample->image);
        item.label = sample->label;
        if (buffer_size_ <= 1) ++emitted_;
        return item;
      }
      reader_.reset();
    }
  }

  void hold(int64_t bytes) {
    held_ += bytes;
    bytes_->add(bytes);
  }

  std::vector<std::filesystem::path> shards_;
  ShardOptions options_;
  int64_t buffer_size_;
  int64_t buffer_bytes_;
  int64_t held_ = 0;  // the buffer's bytes
  Rng rng_;
  StreamLoader::BufferBytes* bytes_;
  size_t shard_ = 0;
  std::unique_ptr<ShardReader> reader_;
  std::vector<Item> buffer_;
  int64_t emitted_ = 0;
};

// An image's row of the batch: uint8 (C, S, S), of any strides (the decoder
// gives a channels-last view), copied into a plain (C, S, S) row, mirrored
// left-right when `flip`.
void write_pixels(const at::Tensor& image, bool flip, uint8_t* out) {
  const int64_t channels = image.size(0), h = image.size(1), w = image.size(2);
  const int64_t sc = image.stride(0), sy = image.stride(1), sx = image.stride(2);
  const uint8_t* in = image.data_ptr<uint8_t>();
  for (int64_t c = 0; c < channels; ++c)
    for (int64_t y = 0; y < h; ++y, out += w) {
      const uint8_t* row = in + c * sc + y * sy;
      for (int64_t x = 0; x < w; ++x)
        out[x] = row[(flip ? w - 1 - x : x) * sx];
    }
}

// The same, normalised on the way: p * scale[c] - shift[c], as float. On
// the CPU this is the workers' work, so the trainer's thread receives a
// ready batch.
void write_normalized(const at::Tensor& image, bool flip, const std::vector<float>& scale,
                      const std::vector<float>& shift, float* out) {
  const int64_t channels = image.size(0), h = image.size(1), w = image.size(2);
  const int64_t sc = image.stride(0), sy = image.stride(1), sx = image.stride(2);
  const uint8_t* in = image.data_ptr<uint8_t>();
  for (int64_t c = 0; c < channels; ++c) {
    const float a = scale[c], b = shift[c];
    for (int64_t y = 0; y < h; ++y, out += w) {
      const uint8_t* row = in + c * sc + y * sy;
      for (int64_t x = 0; x < w; ++x)
        out[x] = float(row[(flip ? w - 1 - x : x) * sx]) * a - b;
    }
  }
}

int64_t worker_count(int64_t asked) {
  if (asked > 0) return asked;
  return std::max<int64_t>(1, std::thread::hardware_concurrency());
}

}  // namespace streaming

StreamSettings stream_settings(const Config& config) {
  StreamSettings s;
  s.channels = config.model.channels;
  s.side = config.model.image_size;
  s.random_resized_crop = config.data.augment.random_resized_crop;
  s.evaluation = evaluation_transform(config.data);
  s.workers = config.data.workers;
  s.prefetch_batches = config.data.prefetch_batches;
  s.shuffle_buffer = config.data.shuffle_buffer;
  s.shuffle_buffer_bytes = config.data.shuffle_buffer_mb << 20;
  s.skip_corrupt = config.data.skip_corrupt;
  return s;
}

io::CropResizePlan evaluation_plan(const StreamSettings& settings, int64_t height, int64_t width) {
  return data::evaluation_plan(settings.evaluation, height, width, settings.side);
}

// A decoded batch on the CPU, and its labels: uint8 (rows, C, S, S), pinned
// for a CUDA device, or float and normalised already where the workers
// normalise (normalize_in_workers_).
struct StreamLoader::Ready {
  int64_t epoch = 0, step = 0;
  at::Tensor images;
  std::vector<int64_t> labels;
};

// One pass over the stream from (epoch, step): a thread that lays out the
// batches and their items, `workers` threads that decode them, and the
// consumer (the trainer's thread) taking finished batches in order.
class StreamLoader::Pipeline {
 public:
  Pipeline(const StreamLoader& loader, int64_t epoch, int64_t step)
      : loader_(loader), next_epoch_(epoch), next_step_(step) {
    const auto& s = loader.settings_;
    for (int64_t w = 0; w < streaming::worker_count(s.workers); ++w)
      workers_.emplace_back([this] { work(); });
    planner_ = std::thread([this, epoch, step] { plan(epoch, step); });
  }

  ~Pipeline() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
    }
    changed_.notify_all();
    planner_.join();
    for (auto& w : workers_)
      w.join();
  }

  bool is_next(int64_t epoch, int64_t step) const {
    return epoch == next_epoch_ && step == next_step_;
  }

  // The next batch in order, once decoded; throws what failed on the way.
  Ready take() {
    std::unique_lock<std::mutex> lock(mutex_);
    // The batches laid out before a failure of the planner are still handed
    // out; its error comes when they are all taken.
    changed_.wait(lock, [&] {
      return (!slots_.empty() && slots_.front()->remaining == 0) || (finished_ && slots_.empty());
    });
    if (!slots_.empty() && slots_.front()->remaining == 0) {
      auto slot = std::move(slots_.front());
      slots_.pop_front();
      lock.unlock();
      changed_.notify_all();  // room for the planner
      fill_failed_rows(*slot);
      advance();
      return {slot->epoch, slot->step, slot->images, std::move(slot->labels)};
    }
    if (!error_.empty()) throw Error(error_);
    throw Error(loader_.split_.source + ": the stream ended before epoch " +
                std::to_string(next_epoch_) + ", step " + std::to_string(next_step_));
  }

 private:
  struct Slot {
    int64_t epoch = 0, step = 0;
    at::Tensor images;                // (rows, C, S, S): see Ready
    std::vector<int64_t> labels;      // per row
    std::vector<std::string> failed;  // per row: the error of an image that did not decode
    int64_t remaining = 0;            // rows still decoding
  };
  struct Job {
    std::shared_ptr<Slot> slot;
    int64_t row = 0;
    streaming::Item item;
  };

  void advance() {
    if (++next_step_ == loader_.batches_per_epoch_) {
      next_step_ = 0;
      ++next_epoch_;
    }
  }

  std::unique_ptr<streaming::ItemSequence> sequence(int64_t epoch, int64_t first_step) const {
    const auto& l = loader_;
    const auto& o = l.options_;
    if (!l.split_.from_shards()) {
      const int64_t n = l.split_.size();
      std::vector<int64_t> order;
      if (o.train) {
        order = epoch_order(n, o.seed, epoch);
        if (l.epoch_rows_ > n) order = padded_for_ranks(std::move(order), o.shard_count);
      } else {
        order.resize(static_cast<size_t>(n));
        std::iota(order.begin(), order.end(), 0);
      }
      return std::make_unique<streaming::FileSequence>(
          l.split_, std::move(order), o.batch_size, o.train ? o.shard_index : 0,
          o.train ? o.shard_count : 1, first_step, l.batches_per_epoch_);
    }
    std::vector<std::filesystem::path> shards;
    for (const size_t s : l.my_shards_)
      shards.push_back(l.split_.shards[s]);
    const auto tag = [&](uint64_t stream) {
      return Rng::derive(
          {o.seed, stream, static_cast<uint64_t>(epoch), static_cast<uint64_t>(o.shard_index)});
    };
    if (o.train) {  // this rank's shards in the epoch's order
      Rng order_rng = tag(streaming::kShardOrderStream);
      for (int64_t i = int64_t(shards.size()) - 1; i > 0; --i)
        std::swap(shards[i], shards[order_rng.below(static_cast<uint64_t>(i) + 1)]);
    }
    ShardOptions options;
    options.max_member_bytes = l.settings_.max_member_bytes;
    options.num_classes = l.num_classes_;
    options.skip_corrupt = l.settings_.skip_corrupt;
    const Rng shuffle_rng = tag(streaming::kShuffleBufferStream);
    const auto open = [&l, &o, shards, options, shuffle_rng](int64_t skip) {
      return std::make_unique<streaming::ShardSequence>(
          shards, options, o.train ? l.settings_.shuffle_buffer : 1,
          l.settings_.shuffle_buffer_bytes, shuffle_rng, skip, &l.shuffle_bytes_);
    };
    const int64_t skip = first_step * l.local_batch_;
    if (!o.train || l.epoch_rows_ <= l.my_samples_) return open(skip);
    return std::make_unique<streaming::RepeatingSequence>(open, l.my_samples_, l.epoch_rows_, skip);
  }

  // A batch's images: a buffer the consumer has let go of (the pool holds
  // the only reference), else a new one. On the CPU a float batch of
  // ImageNet's size is past glibc's mmap threshold, so each new one would
  // come from the kernel, page fault by page fault. (Pinned memory has its
  // own cache in LibTorch.)
  at::Tensor batch_buffer(int64_t rows, bool pinned) {
    const auto& s = loader_.settings_;
    const std::vector<int64_t> shape = {rows, s.channels, s.side, s.side};
    const auto dtype = loader_.normalize_in_workers_ ? torch::kFloat32 : torch::kUInt8;
    if (!pinned) {
      for (const auto& buffer : buffers_)
        // Nothing else holds it, not even a view of its storage.
        if (buffer.use_count() == 1 && buffer.storage().use_count() == 1 && buffer.sizes() == shape)
          return buffer;
    }
    auto buffer = torch::empty(shape, torch::TensorOptions(dtype).pinned_memory(pinned));
    // The batches in flight, and the one the consumer holds.
    if (!pinned && static_cast<int64_t>(buffers_.size()) < s.prefetch_batches + 1)
      buffers_.push_back(buffer);
    return buffer;
  }

  // Lays out every batch from (epoch, step) on, a prefetch's worth ahead of
  // the consumer; evaluation stops after one pass.
  void plan(int64_t epoch, int64_t step) {
    try {
      const auto& s = loader_.settings_;
      const bool pinned = loader_.options_.device.is_cuda();
      for (int64_t e = epoch;; ++e) {
        auto items = sequence(e, e == epoch ? step : 0);
        for (int64_t k = (e == epoch ? step : 0); k < loader_.batches_per_epoch_; ++k) {
          auto slot = std::make_shared<Slot>();
          slot->epoch = e;
          slot->step = k;
          const int64_t rows = loader_.batch_rows(k);
          slot->images = batch_buffer(rows, pinned);
          slot->labels.assign(static_cast<size_t>(rows), 0);
          slot->failed.assign(static_cast<size_t>(rows), "");
          slot->remaining = rows;
          std::vector<Job> jobs;
          for (int64_t r = 0; r < rows; ++r) {
            auto item = items->next();
            if (!item)
              throw Error(loader_.split_.source + ": the stream ran out at epoch " +
                          std::to_string(e) + ", step " + std::to_string(k) + " (" +
                          std::to_string(r) + " of " + std::to_string(rows) + " images)");
            jobs.push_back({slot, r, std::move(*item)});
          }
          std::unique_lock<std::mutex> lock(mutex_);
          changed_.wait(lock, [&] {
            return stopping_ || static_cast<int64_t>(slots_.size()) < s.prefetch_batches;
          });
          if (stopping_) return;
          slots_.push_back(slot);
          for (auto& job : jobs)
            jobs_.push_back(std::move(job));
          lock.unlock();
          changed_.notify_all();
        }
        if (!loader_.options_.train) break;
      }
    } catch (const std::exception& e) {
      std::lock_guard<std::mutex> lock(mutex_);
      if (error_.empty()) error_ = e.what();
    }
    {
      std::lock_guard<std::mutex> lock(mutex_);
      finished_ = true;
    }
    changed_.notify_all();
  }

  void work() {
    while (true) {
      Job job;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        changed_.wait(lock, [&] { return stopping_ || !jobs_.empty(); });
        if (stopping_) return;
        job = std::move(jobs_.front());
        jobs_.pop_front();
      }
      std::string failure;
      try {
        decode_into(job);
      } catch (const std::exception& e) {
        failure = e.what();
      }
      bool done;
      {
        std::lock_guard<std::mutex> lock(mutex_);
        if (!failure.empty()) job.slot->failed[job.row] = failure;
        done = --job.slot->remaining == 0;
      }
      if (done || !failure.empty()) changed_.notify_all();
    }
  }

  void decode_into(Job& job) const {
    const auto& l = loader_;
    const auto& s = l.settings_;
    const auto& o = l.options_;
    streaming::Item& item = job.item;
    std::string name = item.name;
    if (item.file >= 0) {
      const auto path = l.split_.path(item.file);
      name = path.string();
      item.bytes = read_file_bytes(path);
    }
    // Files: the position is global, so the crop is the same whatever the
    // number of ranks; shards: each rank's stream is its own.
    Rng rng = Rng::derive({o.seed, streaming::kCropStream, static_cast<uint64_t>(job.slot->epoch),
                           static_cast<uint64_t>(item.file >= 0 ? 0 : o.shard_index),
                           static_cast<uint64_t>(item.position)});
    const io::PlanForSize plan = [&](int64_t height, int64_t width) {
      if (s.random_resized_crop && o.train)
        return random_resized_crop_plan(height, width, s.side, *s.random_resized_crop, rng);
      return evaluation_plan(s, height, width);
    };
    const at::Tensor image =
        io::decode_planned(item.bytes.data(), item.bytes.size(), s.channels, plan, name);
    if (item.label < 0 || item.label >= l.num_classes_)
      throw Error(name + ": label " + std::to_string(item.label) + " outside 0.." +
                  std::to_string(l.num_classes_ - 1));
    // The flip is drawn after the crop, from the image's own stream.
    const bool flip = o.train && o.augment.hflip && rng.below(2) == 1;
    if (l.normalize_in_workers_) {
      streaming::write_normalized(image, flip, l.normalizer_->channel_scale(),
                                  l.normalizer_->channel_shift(),
                                  job.slot->images[job.row].data_ptr<float>());
    } else {
      streaming::write_pixels(image, flip, job.slot->images[job.row].data_ptr<uint8_t>());
    }
    job.slot->labels[job.row] = item.label;
  }

  // A row whose image failed stops the run, naming it; with skip_corrupt it
  // takes the nearest good row's image and label (the next one, else the
  // previous), so a batch keeps its size and the result does not depend on
  // which worker finished first.
  void fill_failed_rows(Slot& slot) const {
    const auto rows = static_cast<int64_t>(slot.failed.size());
    for (int64_t r = 0; r < rows; ++r) {
      if (slot.failed[r].empty()) continue;
      if (!loader_.settings_.skip_corrupt) throw Error(slot.failed[r]);
      spdlog::warn("skipped: {} (data.skip_corrupt)", slot.failed[r]);
      int64_t good = -1;
      for (int64_t d = 1; d < rows && good < 0; ++d) {
        if (r + d < rows && slot.failed[r + d].empty())
          good = r + d;
        else if (r - d >= 0 && slot.failed[r - d].empty())
          good = r - d;
      }
      if (good < 0)
        throw Error(loader_.split_.source + ": every image of epoch " + std::to_string(slot.epoch) +
                    ", step " + std::to_string(slot.step) +
                    " failed to decode; the last: " + slot.failed[r]);
      slot.images[r].copy_(slot.images[good]);
      slot.labels[r] = slot.labels[good];
    }
  }

  const StreamLoader& loader_;
  int64_t next_epoch_, next_step_;  // what take() hands out next
  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<std::shared_ptr<Slot>> slots_;  // planned batches, in order
  std::deque<Job> jobs_;                     // images waiting for a worker
  std::string error_;                        // the planner's failure (a shard, say)
  bool stopping_ = false;
  bool finished_ = false;            // the planner is done (one pass of evaluation, or an error)
  std::vector<at::Tensor> buffers_;  // the planner's: batches' images for reuse (CPU)
  std::vector<std::thread> workers_;
  std::thread planner_;
};

StreamLoader::StreamLoader(StreamedSplit split, LoaderOptions options, StreamSettings settings)
    : split_(std::move(split)), options_(std::move(options)), settings_(std::move(settings)) {
  const auto& o = options_;
  if (o.batch_size <= 0)
    throw Error("stream loader: batch size " + std::to_string(o.batch_size) + " is not positive");
  if (o.shard_count < 1 || o.shard_index < 0 || o.shard_index >= o.shard_count ||
      (!o.train && o.shard_count > 1))
    throw Error("stream loader: shard " + std::to_string(o.shard_index) + " of " +
                std::to_string(o.shard_count) +
                " is not valid (training loaders only, 0 <= index < count)");
  if (o.batch_size % o.shard_count != 0)
    throw Error("train.batch_size " + std::to_string(o.batch_size) + " is not divisible by the " +
                std::to_string(o.shard_count) +
                " ranks (WORLD_SIZE): train.batch_size is the global batch, which the ranks "
                "split evenly");
  if (settings_.prefetch_batches < 0)
    throw Error("data.prefetch_batches is " + std::to_string(settings_.prefetch_batches) +
                ", expected >= 0");
  if (settings_.prefetch_batches == 0) settings_.prefetch_batches = o.device.is_cuda() ? 4 : 2;
  num_classes_ = split_.num_classes();
  local_batch_ = o.train ? o.batch_size / o.shard_count : o.batch_size;
  if (split_.from_shards())
    plan_shards();
  else
    plan_files();
  normalizer_ = std::make_shared<Normalizer>(o.mean, o.std, settings_.channels, options_.device);
  // On the CPU the workers normalise too, unless the batch stage needs the
  // pixels: RandAugment and mixing work on [0, 1] images, and the pad-and-crop
  // pads with black.
  normalize_in_workers_ =
      !o.device.is_cuda() &&
      (!o.train || (o.augment.randaugment_ops == 0 && !mixing_enabled(o.augment) &&
                    (settings_.random_resized_crop || o.augment.crop_padding == 0)));
}

StreamLoader::~StreamLoader() = default;

void StreamLoader::plan_files() {
  const auto& o = options_;
  const int64_t n = split_.size(), ranks = o.shard_count;
  if (!o.train) {
    size_ = n;
    batches_per_epoch_ = epoch_batches(n, o.batch_size, /*drop_last=*/false);
    return;
  }
  epoch_rows_ = epoch_order_length(n, o);
  batches_per_epoch_ = epoch_batches(epoch_rows_, o.batch_size, o.drop_last);
  size_ = o.drop_last ? batches_per_epoch_ * local_batch_ : epoch_rows_ / ranks;
}

// Whole shards per rank, each shard to the rank with the fewest samples so
// far, the largest first, so the ranks' shares differ by less than a shard.
// Every rank trains the same number of steps: as many as the rank with the
// fewest samples fills, or, keeping the last batch, as the rank with the
// most needs, the others repeating their first samples.
void StreamLoader::plan_shards() {
  const auto& o = options_;
  const auto shards = split_.shards.size();
  if (!o.train) {
    for (size_t s = 0; s < shards; ++s)
      my_shards_.push_back(s);
    size_ = split_.size();
    batches_per_epoch_ = epoch_batches(size_, local_batch_, /*drop_last=*/false);
    return;
  }
  if (o.shard_count > static_cast<int64_t>(shards))
    throw Error(split_.source + ": " + std::to_string(shards) + " shards for " +
                std::to_string(o.shard_count) +
                " ranks; each rank reads whole shards, so there must be one per rank at least");
  std::vector<size_t> by_size(shards);
  std::iota(by_size.begin(), by_size.end(), size_t{0});
  std::stable_sort(by_size.begin(), by_size.end(), [&](size_t a, size_t b) {
    return split_.shard_samples[a] > split_.shard_samples[b];
  });
  std::vector<int64_t> samples(static_cast<size_t>(o.shard_count), 0);
  for (const size_t s : by_size) {
    const auto rank =
        static_cast<size_t>(std::min_element(samples.begin(), samples.end()) - samples.begin());
    samples[rank] += split_.shard_samples[s];
    if (static_cast<int64_t>(rank) == o.shard_index) my_shards_.push_back(s);
  }
  std::sort(my_shards_.begin(), my_shards_.end());
  my_samples_ = samples[static_cast<size_t>(o.shard_index)];
  const int64_t fewest = *std::min_element(samples.begin(), samples.end());
  const int64_t most = *std::max_element(samples.begin(), samples.end());
  epoch_rows_ = o.drop_last ? fewest : most;
  batches_per_epoch_ = epoch_batches(epoch_rows_, local_batch_, o.drop_last);
  size_ = o.drop_last ? batches_per_epoch_ * local_batch_ : epoch_rows_;
}

int64_t StreamLoader::batch_rows(int64_t step) const {
  const auto& o = options_;
  if (!o.train) return std::min(local_batch_, size_ - step * local_batch_);
  if (split_.from_shards()) return std::min(local_batch_, epoch_rows_ - step * local_batch_);
  return std::min(o.batch_size, epoch_rows_ - step * o.batch_size) / o.shard_count;
}

void StreamLoader::BufferBytes::add(int64_t bytes) {
  const int64_t held = now.fetch_add(bytes) + bytes;
  int64_t most = peak.load();
  while (held > most && !peak.compare_exchange_weak(most, held)) {
  }
}

std::optional<PipelineBytes> StreamLoader::pipeline_bytes() const {
  PipelineBytes out;
  const int64_t pixels = settings_.channels * settings_.side * settings_.side;
  const int64_t bytes_per_pixel = normalize_in_workers_ ? 4 : 1;
  out.batches = (settings_.prefetch_batches + 1) * local_batch_ * pixels * bytes_per_pixel;
  if (split_.from_shards() && options_.train && settings_.shuffle_buffer > 1) {
    out.shuffle_buffer = shuffle_bytes_.now.load();
    out.shuffle_buffer_peak = shuffle_bytes_.peak.load();
    out.shuffle_buffer_cap = settings_.shuffle_buffer_bytes;
  }
  return out;
}

StreamLoader::Ready StreamLoader::next_ready(int64_t epoch, int64_t step) const {
  if (step < 0 || step >= batches_per_epoch_ || epoch < 0)
    throw Error("stream loader: step " + std::to_string(step) + " is outside 0.." +
                std::to_string(batches_per_epoch_ - 1) + " of an epoch");
  if (!pipeline_ || !pipeline_->is_next(epoch, step)) {
    pipeline_.reset();  // joins the old pass's threads first
    pipeline_ = std::make_unique<Pipeline>(*this, epoch, step);
  }
  Ready ready = pipeline_->take();
  // An evaluation pass ends here: its threads and buffers go until the next
  // one (a validation every epoch need not hold memory in between).
  if (!options_.train && step == batches_per_epoch_ - 1) pipeline_.reset();
  return ready;
}

Batch StreamLoader::assemble(int64_t epoch, int64_t step) const {
  Ready ready = next_ready(epoch, step);
  const auto& o = options_;
  Batch out;
  out.images = ready.images.to(o.device, /*non_blocking=*/ready.images.is_pinned());
  out.labels = torch::tensor(ready.labels, torch::kInt64)
                   .view({static_cast<int64_t>(ready.labels.size())})
                   .to(o.device);
  if (!o.train || normalize_in_workers_) return out;
  // The rest of the batch augmentation, as the in-memory path runs it, on
  // this rank's rows: the workers flipped, and a random resized crop
  // replaces the pad-and-crop.
  AugmentConfig augment = o.augment;
  augment.hflip = false;
  if (settings_.random_resized_crop) augment.crop_padding = 0;
  Rng rng = Rng::derive({o.seed, streaming::kStreamAugmentStream, static_cast<uint64_t>(epoch),
                         static_cast<uint64_t>(step), static_cast<uint64_t>(o.shard_index)});
  auto augmented = augment_batch(out.images, out.labels, num_classes_, augment, rng);
  out.images = std::move(augmented.images);
  out.targets = std::move(augmented.targets);
  return out;
}

Batch StreamLoader::batch(int64_t epoch, int64_t step) const {
  Batch out = assemble(epoch, step);
  if (!normalize_in_workers_) out.images = normalizer_->normalize(out.images);
  if (options_.train && options_.augment.random_erasing > 0) {
    Rng rng =
        Rng::derive({options_.seed, streaming::kStreamErasingStream, static_cast<uint64_t>(epoch),
                     static_cast<uint64_t>(step), static_cast<uint64_t>(options_.shard_index)});
    out.images = random_erasing(out.images, options_.augment.random_erasing, rng);
  }
  return out;
}

Batch StreamLoader::batch_unnormalized(int64_t epoch, int64_t step) const {
  Batch out = assemble(epoch, step);
  out.images = normalize_in_workers_ ? normalizer_->unnormalize(out.images)
                                     : Normalizer::unit_range(out.images);
  return out;
}

}  // namespace vit::data
