// Config::validate: every value within its range, with a one-line message
// that names the key.
#include <cmath>
#include <string>

#include "fields.hpp"
#include "vit/config.hpp"
#include "vit/error.hpp"

namespace vit {
namespace {

using config_detail::parsed_freeze;

void require(bool ok, const std::string& message) {
  if (!ok) throw Error("invalid config: " + message);
}

std::string quoted(const std::string& s) {
  return "'" + s + "'";
}

// An integer in [low, high]; `note` says what the bounds mean where it helps.
void require_range(const std::string& path, int64_t value, int64_t low, int64_t high,
                   const std::string& note = "") {
  require(value >= low && value <= high, path + " is " + std::to_string(value) + ", expected " +
                                             std::to_string(low) + ".." + std::to_string(high) +
                                             note);
}

void require_fraction(const std::string& path, double value, bool allow_one) {
  require(value >= 0.0 && (allow_one ? value <= 1.0 : value < 1.0),
          path + " is " + std::to_string(value) + ", expected a value in [0, 1" +
              (allow_one ? "]" : ")"));
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
  require(std::isfinite(m.init_values) && m.init_values >= 0,
          "model.init_values is " + std::to_string(m.init_values) +
              ", expected >= 0 (0 = no LayerScale)");
}

// The upper bounds (config.hpp) keep every size, and the parameter and FLOP
// counts computed from them, far inside int64.
void validate_model(const ModelConfig& m) {
  require_range("model.image_size", m.image_size, 1, kMaxImageSize);
  require(m.patch_size > 0,
          "model.patch_size is " + std::to_string(m.patch_size) + ", expected > 0");
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
  require_range("model.dim", m.dim, 1, kMaxWidth);
  require_range("model.depth", m.depth, 1, kMaxDepth);
  require_range("model.heads", m.heads, 1, kMaxWidth);
  require_range("model.dim_head", m.dim_head, 0, kMaxWidth, " (0 = dim / heads)");
  require(m.dim_head > 0 || m.dim % m.heads == 0,
          "model.heads " + std::to_string(m.heads) + " does not divide model.dim " +
              std::to_string(m.dim) + " (set model.dim_head to use another head width)");
  require(m.inner_dim() <= kMaxWidth, "model.heads * model.dim_head is " +
                                          std::to_string(m.inner_dim()) + ", expected at most " +
                                          std::to_string(kMaxWidth));
  require_range("model.mlp_dim", m.mlp_dim, 1, kMaxWidth);
  require_fraction("model.dropout", m.dropout, false);
  require_fraction("model.emb_dropout", m.emb_dropout, false);
  require_fraction("model.attn_dropout", m.attn_dropout, false);
  require(m.layer_norm_eps > 0,
          "model.layer_norm_eps is " + std::to_string(m.layer_norm_eps) + ", expected > 0");
  require_fraction("model.drop_path", m.drop_path, false);
  require_range("model.registers", m.registers, 0, kMaxRegisters);
  validate_model_options(m);
}

// A [low, high] pair with 0 < low <= high (and high <= `most` when given).
void require_interval(const std::string& path, const std::vector<double>& v, double most) {
  const bool ok = v.size() == 2 && v[0] > 0 && v[0] <= v[1] && (most <= 0 || v[1] <= most);
  std::string got = "[";
  for (size_t i = 0; i < v.size(); ++i)
    got += (i ? ", " : "") + std::to_string(v[i]);
  require(ok, path + " is " + got + "], expected [low, high] with 0 < low <= high" +
                  (most > 0 ? " <= " + std::to_string(most) : std::string()));
}

void validate_streaming(const DataConfig& d) {
  if (const auto& crop = d.augment.random_resized_crop) {
    require_interval("data.augment.random_resized_crop.scale", crop->scale, 1.0);
    require_interval("data.augment.random_resized_crop.ratio", crop->ratio, 0.0);
  }
  require_fraction("data.augment.random_erasing", d.augment.random_erasing, true);
  require(d.memory_budget_mb >= 0, "data.memory_budget_mb is " +
                                       std::to_string(d.memory_budget_mb) +
                                       ", expected >= 0 (0 = a quarter of the machine's memory)");
  require_range("data.workers", d.workers, 0, kMaxThreads, " (0 = one per core)");
  require_range("data.prefetch_batches", d.prefetch_batches, 0, 1024, " (0 = by device)");
  require(d.crop_pct > 0 && d.crop_pct <= 1,
          "data.crop_pct is " + std::to_string(d.crop_pct) + ", expected a value in (0, 1]");
  require_range("data.shuffle_buffer", d.shuffle_buffer, 1, 1'000'000);
  require_range("data.shuffle_buffer_mb", d.shuffle_buffer_mb, 1, 1 << 20);
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
  require(d.val_size >= 0, "data.val_size is " + std::to_string(d.val_size) + ", expected >= 0");
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
  for (double s : d.std)
    require(s > 0, "data.std holds " + std::to_string(s) + ", expected every value > 0");
  const auto& a = d.augment;
  // Reflect padding needs a side longer than the padding; zero padding that
  // wide would crop mostly black squares.
  require_range("data.augment.crop_padding", a.crop_padding, 0, m.image_size - 1,
                " (below model.image_size)");
  require(a.randaugment_ops >= 0, "data.augment.randaugment_ops is " +
                                      std::to_string(a.randaugment_ops) + ", expected >= 0");
  require(a.randaugment_magnitude >= 0 && a.randaugment_magnitude <= 30,
          "data.augment.randaugment_magnitude is " + std::to_string(a.randaugment_magnitude) +
              ", expected 0..30");
  require(a.mixup_alpha >= 0,
          "data.augment.mixup_alpha is " + std::to_string(a.mixup_alpha) + ", expected >= 0");
  require(a.cutmix_alpha >= 0,
          "data.augment.cutmix_alpha is " + std::to_string(a.cutmix_alpha) + ", expected >= 0");
  require_fraction("data.augment.mix_prob", a.mix_prob, true);
  require(d.limit_train >= 0,
          "data.limit_train is " + std::to_string(d.limit_train) + ", expected >= 0 (0 = all)");
  require(d.limit_test >= 0,
          "data.limit_test is " + std::to_string(d.limit_test) + ", expected >= 0 (0 = all)");
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
  require(t.batch_size > 0,
          "train.batch_size is " + std::to_string(t.batch_size) + ", expected > 0");
  require(t.eval_batch_size >= 0,
          "train.eval_batch_size is " + std::to_string(t.eval_batch_size) + ", expected >= 0");
  require(t.epochs > 0, "train.epochs is " + std::to_string(t.epochs) + ", expected > 0");
  require(t.lr > 0, "train.lr is " + std::to_string(t.lr) + ", expected > 0");
  require(t.min_lr >= 0 && t.min_lr <= t.lr,
          "train.min_lr is " + std::to_string(t.min_lr) + ", expected 0 <= min_lr <= lr");
  require_fraction("train.momentum", t.momentum, false);
  require(
      t.betas.size() == 2 && t.betas[0] >= 0 && t.betas[0] < 1 && t.betas[1] >= 0 && t.betas[1] < 1,
      "train.betas must be two values in [0, 1)");
  require(t.weight_decay >= 0,
          "train.weight_decay is " + std::to_string(t.weight_decay) + ", expected >= 0");
  require(t.warmup_epochs >= 0,
          "train.warmup_epochs is " + std::to_string(t.warmup_epochs) + ", expected >= 0");
  require_fraction("train.label_smoothing", t.label_smoothing, false);
  require(t.grad_clip >= 0,
          "train.grad_clip is " + std::to_string(t.grad_clip) + ", expected >= 0 (0 = off)");
  require(t.early_stop_patience >= 0, "train.early_stop_patience is " +
                                          std::to_string(t.early_stop_patience) +
                                          ", expected >= 0 (0 = off)");
  require(t.early_stop_min_delta >= 0, "train.early_stop_min_delta is " +
                                           std::to_string(t.early_stop_min_delta) +
                                           ", expected >= 0");
  require(t.validate_every >= 0, "train.validate_every is " + std::to_string(t.validate_every) +
                                     ", expected >= 0 (0 = every epoch)");
  require(t.snapshot_every >= 0, "train.snapshot_every is " + std::to_string(t.snapshot_every) +
                                     ", expected >= 0 (0 = off)");
  require(t.log_every_s > 0,
          "train.log_every_s is " + std::to_string(t.log_every_s) + ", expected > 0");
  require(t.layer_decay > 0 && t.layer_decay <= 1,
          "train.layer_decay is " + std::to_string(t.layer_decay) + ", expected (0, 1] (1 = off)");
  require(t.head_lr_scale > 0,
          "train.head_lr_scale is " + std::to_string(t.head_lr_scale) + ", expected > 0");
  require(t.dist_timeout_s > 0,
          "train.dist_timeout_s is " + std::to_string(t.dist_timeout_s) + ", expected > 0");
  require(t.dist_bucket_mb > 0,
          "train.dist_bucket_mb is " + std::to_string(t.dist_bucket_mb) + ", expected > 0");
}

// What does not fit: the micro-batches divide the batch, the checkpointed
// blocks exist, the average's decay is one.
void validate_fitting(const TrainConfig& t, int64_t depth) {
  require(t.accum_steps > 0 && t.batch_size % t.accum_steps == 0,
          "train.accum_steps is " + std::to_string(t.accum_steps) +
              ", expected a divisor of train.batch_size " + std::to_string(t.batch_size) +
              " (each micro-batch is batch_size / accum_steps images)");
  require_range("train.grad_checkpointing", t.grad_checkpointing.every, 0, depth,
                " (true = every block, k = every k-th block of model.depth)");
  if (t.ema)
    require(t.ema->decay > 0 && t.ema->decay < 1,
            "train.ema.decay is " + std::to_string(t.ema->decay) + ", expected (0, 1)");
}

// "none", "backbone" or a block count 0..depth.
void validate_freeze(const std::string& freeze, int64_t depth) {
  const auto plan = parsed_freeze(freeze);
  require(plan && (plan->kind != FreezePlan::Kind::kBlocks || plan->blocks <= depth),
          "train.freeze is " + quoted(freeze) +
              ", expected none | backbone | N (freeze the embeddings and the first N blocks, 0.." +
              std::to_string(depth) + ")");
}

void validate_analysis(const AnalysisConfig& a) {
  require_fraction("analysis.discard_ratio", a.discard_ratio, false);
  require(a.rollout_samples > 0,
          "analysis.rollout_samples is " + std::to_string(a.rollout_samples) + ", expected > 0");
  require(a.distance_samples > 0,
          "analysis.distance_samples is " + std::to_string(a.distance_samples) + ", expected > 0");
}

}  // namespace

void Config::validate() const {
  require(!name.empty(), "name is empty, expected a run name such as \"cifar10\"");
  require_range("threads", threads, 0, kMaxThreads, " (0 = all cores)");
  require(device_choice(device).has_value(),
          "device is " + quoted(device) + ", expected auto | cpu | cuda | cuda:N");
  validate_model(model);
  validate_data(data, model);
  validate_train(train);
  validate_freeze(train.freeze, model.depth);
  validate_fitting(train, model.depth);
  validate_analysis(analysis);
}

}  // namespace vit
