// Config::validate: every value within its range, with a one-line message
// that names the key.
#include <cmath>
#include <string>

#include "fields.hpp"
#include "vit/config.hpp"
#include "vit/error.hpp"

namespace vit {

namespace config_detail {

namespace {

// A bound or a value as a person writes it: 0, 1024, 0.5, 1e-06.
std::string number_text(double v) {
  if (v == std::floor(v) && std::abs(v) < 1e15) return std::to_string(int64_t(v));
  return json(v).dump();
}

}  // namespace

std::string Range::text() const {
  if (whole) return number_text(low) + ".." + number_text(high);
  if (!interval()) return (low_open ? "> " : ">= ") + number_text(low);
  return (low_open ? "(" : "[") + number_text(low) + ", " + number_text(high) +
         (high_open ? ")" : "]");
}

std::string Range::described() const {
  return *note ? text() + " (" + note + ")" : text();
}

}  // namespace config_detail

namespace {

using config_detail::for_each_field;
using config_detail::parsed_freeze;
using config_detail::Range;

void require(bool ok, const std::string& message) {
  if (!ok) throw Error("invalid config: " + message);
}

std::string quoted(const std::string& s) {
  return "'" + s + "'";
}

// An integer in [low, high] that depends on another field; `note` says what the bounds mean.
void require_range(const std::string& path, int64_t value, int64_t low, int64_t high,
                   const std::string& note) {
  require(value >= low && value <= high, path + " is " + std::to_string(value) + ", expected " +
                                             std::to_string(low) + ".." + std::to_string(high) +
                                             note);
}

// Every number the field table gives a range, with the message the range makes:
// "model.dropout is 1, expected a value in [0, 1)".
void validate_ranges(const Config& c) {
  for_each_field(c, [](const char* path, const auto& value, const char*, const Range& range) {
    using T = std::decay_t<decltype(value)>;
    if (range.any()) return;
    if constexpr (std::is_same_v<T, std::vector<double>>) {
      for (const double v : value)
        require(range.holds(v), std::string(path) + " holds " + config_detail::number_text(v) +
                                    ", expected every value " + (range.interval() ? "in " : "") +
                                    range.described());
    } else if constexpr (std::is_arithmetic_v<T> && !std::is_same_v<T, bool>) {
      const std::string shown =
          std::is_integral_v<T> ? std::to_string(value) : config_detail::number_text(double(value));
      require(range.holds(double(value)), std::string(path) + " is " + shown + ", expected " +
                                              (range.interval() ? "a value in " : "") +
                                              range.described());
    }
  });
}

// timm's VisionTransformer options that depend on one another.
void validate_model_options(const ModelConfig& m) {
  require(m.class_token || m.pool != Pool::kCls,
          "model.pool is cls but model.class_token is false: there is no class token to read "
          "(expected mean or map)");
  require(!m.distilled || (m.class_token && m.pool == Pool::kCls && m.registers == 0),
          "model.distilled needs model.class_token true, model.pool cls and no registers "
          "(DeiT's layout: class token, distillation token, patches)");
  require(m.pool != Pool::kMap || m.dim % m.heads == 0,
          "model.pool map: model.heads " + std::to_string(m.heads) + " does not divide model.dim " +
              std::to_string(m.dim) + " (the attention pool's heads are dim / heads wide)");
}

// The sizes that depend on one another; with the table's upper bounds (config.hpp)
// every size, and the parameter and FLOP counts computed from them, stay far inside int64.
void validate_model(const ModelConfig& m) {
  require(m.image_size % m.patch_size == 0, "model.patch_size " + std::to_string(m.patch_size) +
                                                " does not divide model.image_size " +
                                                std::to_string(m.image_size));
  require(m.num_patches() <= kMaxPatches,
          "model.image_size " + std::to_string(m.image_size) + " / model.patch_size " +
              std::to_string(m.patch_size) + " gives " + std::to_string(m.num_patches()) +
              " patches, expected at most " + std::to_string(kMaxPatches));
  require(m.channels == 1 || m.channels == 3,
          "model.channels is " + std::to_string(m.channels) + ", expected 1 (gray) or 3 (RGB)");
  require(m.num_classes == 0 || (m.num_classes >= 2 && m.num_classes <= kMaxClasses),
          "model.num_classes is " + std::to_string(m.num_classes) + ", expected 2.." +
              std::to_string(kMaxClasses) + ", or 0 for a backbone without a head");
  require(m.dim_head > 0 || m.dim % m.heads == 0,
          "model.heads " + std::to_string(m.heads) + " does not divide model.dim " +
              std::to_string(m.dim) + " (set model.dim_head to use another head width)");
  require(m.inner_dim() <= kMaxWidth, "model.heads * model.dim_head is " +
                                          std::to_string(m.inner_dim()) + ", expected at most " +
                                          std::to_string(kMaxWidth));
  validate_model_options(m);
}

// A [low, high] pair with 0 < low <= high (and high <= `most` when given).
void require_interval(const std::string& path, const std::vector<double>& v, double most) {
  const bool ok = v.size() == 2 && v[0] > 0 && v[0] <= v[1] && (most <= 0 || v[1] <= most);
  std::string got = "[";
  for (size_t i = 0; i < v.size(); ++i)
    got += (i ? ", " : "") + config_detail::number_text(v[i]);
  require(ok, path + " is " + got + "], expected [low, high] with 0 < low <= high" +
                  (most > 0 ? " <= " + config_detail::number_text(most) : std::string()));
}

void validate_streaming(const DataConfig& d) {
  if (const auto& crop = d.augment.random_resized_crop) {
    require_interval("data.augment.random_resized_crop.scale", crop->scale, 1.0);
    require_interval("data.augment.random_resized_crop.ratio", crop->ratio, 0.0);
  }
  const bool shards = d.dataset == DatasetKind::kWebdataset;
  require(!shards || !d.train_shards.empty(),
          "data.train_shards is empty, expected the training shards' brace pattern under "
          "data.root (webdataset), e.g. \"train-{000000..000146}.tar\"");
  require(!shards || !d.val_shards.empty(),
          "data.val_shards is empty, expected the validation shards' brace pattern under "
          "data.root (webdataset)");
  require(!shards || d.stream != StreamMode::kOff,
          "data.stream is false, but webdataset shards are always streamed");
  require(d.dataset != DatasetKind::kSynthetic || !d.augment.random_resized_crop,
          "data.augment.random_resized_crop needs images read from files; synthetic data is "
          "made at the model's size");
  require(!d.augment.random_resized_crop || d.stream != StreamMode::kOff,
          "data.augment.random_resized_crop crops the original images, which only the streamed "
          "path reads; data.stream is false");
}

void validate_data(const DataConfig& d, const ModelConfig& m) {
  const int64_t channels = m.channels;
  require(!d.root.empty(), "data.root is empty, expected the folder holding the dataset");
  require(d.validation != ValidationSource::kFolder || d.dataset == DatasetKind::kImageFolder,
          "data.validation is \"folder\", which reads an image folder's val/; " +
              std::string(enum_name(d.dataset)) + " validates on data.val_size held-out images");
  for (const auto* key : {"mean", "std"}) {
    const auto& values = std::string(key) == "mean" ? d.mean : d.std;
    require(int64_t(values.size()) == channels,
            "data." + std::string(key) + " has " + std::to_string(values.size()) +
                " values, expected one per channel (model.channels = " + std::to_string(channels) +
                ")");
  }
  // Reflect padding needs a side longer than the padding; zero padding that
  // wide would crop mostly black squares.
  require_range("data.augment.crop_padding", d.augment.crop_padding, 0, m.image_size - 1,
                " (below model.image_size)");
  validate_streaming(d);
  require(d.sha256.empty() || !d.url.empty(),
          "data.sha256 is set but data.url is empty: the official archives are checked against "
          "their published MD5, data.sha256 checks a file from data.url");
  require(d.sha256.find_first_not_of("0123456789abcdefABCDEF,") == std::string::npos,
          "data.sha256 is '" + d.sha256 +
              "', expected 64 hexadecimal digits (comma-separated, one per file, for mnist and "
              "fashion-mnist)");
}

void validate_train(const TrainConfig& t) {
  require(
      t.min_lr >= 0 && t.min_lr <= t.lr,
      "train.min_lr is " + config_detail::number_text(t.min_lr) + ", expected 0 <= min_lr <= lr");
  require(t.betas.size() == 2, "train.betas has " + std::to_string(t.betas.size()) +
                                   " values, expected 2 (AdamW's beta1 and beta2)");
}

// What does not fit: the micro-batches divide the batch, the checkpointed
// blocks exist, the average's decay is below one.
void validate_fitting(const TrainConfig& t, int64_t depth) {
  require(t.batch_size % t.accum_steps == 0,
          "train.accum_steps is " + std::to_string(t.accum_steps) +
              ", expected a divisor of train.batch_size " + std::to_string(t.batch_size) +
              " (each micro-batch is batch_size / accum_steps images)");
  require_range("train.grad_checkpointing", t.grad_checkpointing.every, 0, depth,
                " (true = every block, k = every k-th block of model.depth)");
  if (t.ema)
    require(t.ema->decay > 0 && t.ema->decay < 1, "train.ema.decay is " +
                                                      config_detail::number_text(t.ema->decay) +
                                                      ", expected a value in (0, 1)");
}

// "none", "backbone" or a block count 0..depth.
void validate_freeze(const std::string& freeze, int64_t depth) {
  const auto plan = parsed_freeze(freeze);
  require(plan && (plan->kind != FreezePlan::Kind::kBlocks || plan->blocks <= depth),
          "train.freeze is " + quoted(freeze) +
              ", expected none | backbone | N (freeze the embeddings and the first N blocks, 0.." +
              std::to_string(depth) + ")");
}

}  // namespace

void Config::validate() const {
  require(!name.empty(), "name is empty, expected a run name such as \"cifar10\"");
  validate_ranges(*this);
  require(device_choice(device).has_value(),
          "device is " + quoted(device) + ", expected auto | cpu | cuda | cuda:N");
  validate_model(model);
  validate_data(data, model);
  validate_train(train);
  validate_freeze(train.freeze, model.depth);
  validate_fitting(train, model.depth);
}

}  // namespace vit
