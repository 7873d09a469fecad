#include "vit/config.hpp"

#include <algorithm>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>
#include <type_traits>

#include <nlohmann/json.hpp>

#include "vit/error.hpp"

namespace vit {
namespace {

using nlohmann::json;

// A setting as JSON: enums by their names, data.stream as "auto" or a
// boolean, and an unset random_resized_crop as null.
template <typename T>
json json_of(const T& value) {
  if constexpr (std::is_same_v<T, StreamMode>) {
    if (value == StreamMode::kAuto) return "auto";
    return value == StreamMode::kOn;
  } else if constexpr (std::is_same_v<T, std::optional<RandomResizedCrop>>) {
    if (!value) return nullptr;
    return {{"scale", value->scale}, {"ratio", value->ratio}};
  } else if constexpr (std::is_enum_v<T>) {
    return enum_name(value);
  } else {
    return value;
  }
}

// The single list of config fields: (dotted path, member, meaning). Reading,
// writing, overrides, the unknown-key check and the reference (vit config
// --reference, docs/config.md) all walk this list, so a new field is one
// entry here.
template <class C, class F>
void for_each_field(C& c, F&& f) {
  f("name", c.name, "run name; run folders are runs/NAME-TIMESTAMP");
  f("seed", c.seed, "random seed of the weights, the split, the batch order and the augmentation");
  f("device", c.device,
    "auto | cpu | cuda | cuda:N (auto: GPU 0 when LibTorch sees one, else the CPU)");
  f("threads", c.threads, "LibTorch's CPU threads, 0..1024; 0 = all cores");

  auto& m = c.model;
  f("model.image_size", m.image_size, "input side in pixels, square, 1..16384");
  f("model.patch_size", m.patch_size,
    "patch side in pixels; divides image_size; at most 65536 patches");
  f("model.channels", m.channels, "1 (gray) or 3 (RGB)");
  f("model.num_classes", m.num_classes, "outputs of the classifier head, 2..1,000,000");
  f("model.dim", m.dim, "token width D, 1..65536");
  f("model.depth", m.depth, "transformer blocks L, 1..1024");
  f("model.heads", m.heads, "attention heads H, 1..dim");
  f("model.dim_head", m.dim_head, "width of each head; 0 = dim / heads");
  f("model.mlp_dim", m.mlp_dim, "hidden width of each block's MLP");
  f("model.pool", m.pool,
    "what the head reads: the class token (cls) or the mean of the patch tokens (mean)");
  f("model.qkv_bias", m.qkv_bias, "bias on the fused q/k/v projection (timm: true)");
  f("model.dropout", m.dropout, "dropout after the attention projection and in the MLP, [0, 1)");
  f("model.emb_dropout", m.emb_dropout, "dropout after adding the position embedding, [0, 1)");
  f("model.attn_dropout", m.attn_dropout, "dropout on the attention probabilities, [0, 1)");
  f("model.layer_norm_eps", m.layer_norm_eps, "LayerNorm's epsilon (timm's ViT: 1e-6), > 0");
  f("model.drop_path", m.drop_path,
    "stochastic depth: each block's residual branches are dropped per image with a rate rising "
    "linearly from 0 to this at the last block (timm's drop_path_rate), [0, 1)");

  auto& d = c.data;
  f("data.dataset", d.dataset,
    "the format of data.root's files; also sets the defaults of data.mean, data.std and "
    "data.augment.hflip");
  f("data.root", d.root, "folder holding the dataset's files (synthetic: unused)");
  f("data.val_size", d.val_size, "training images held out for validation (stratified)");
  f("data.mean", d.mean, "per-channel mean of [0,1] pixels for normalisation; default per dataset");
  f("data.std", d.std, "per-channel standard deviation, > 0; default per dataset");
  f("data.augment.crop_padding", d.augment.crop_padding,
    "pixels padded before a random crop, below image_size; 0 = off");
  f("data.augment.padding_mode", d.augment.padding_mode,
    "what fills the padding of the random crop: zeros, or the image reflected");
  f("data.augment.random_resized_crop", d.augment.random_resized_crop,
    "torchvision's RandomResizedCrop from the original image (scale: share of its area; ratio: "
    "width / height); replaces crop_padding; always streams; null = off; {} = the defaults "
    "{scale: [0.08, 1], ratio: [0.75, 1.3333]}");
  f("data.augment.hflip", d.augment.hflip,
    "random horizontal flip; default per dataset (off for MNIST)");
  f("data.augment.randaugment_ops", d.augment.randaugment_ops,
    "RandAugment-style operations per image; 0 = off");
  f("data.augment.randaugment_magnitude", d.augment.randaugment_magnitude,
    "RandAugment's magnitude, 0..30");
  f("data.augment.mixup_alpha", d.augment.mixup_alpha, "Beta(a, a) for mixup; 0 = off");
  f("data.augment.cutmix_alpha", d.augment.cutmix_alpha, "Beta(a, a) for CutMix; 0 = off");
  f("data.augment.mix_prob", d.augment.mix_prob,
    "probability that a batch is mixed at all, [0, 1]");
  f("data.augment.random_erasing", d.augment.random_erasing,
    "probability of erasing one random box of each image with noise (timm's RandomErasing, "
    "mode pixel), after mixing; [0, 1]");
  f("data.limit_train", d.limit_train, "keep N training images (seeded, stratified); 0 = all");
  f("data.limit_test", d.limit_test, "keep N test images (seeded, stratified); 0 = all");
  f("data.skip_corrupt", d.skip_corrupt,
    "skip unreadable images with a warning instead of failing");
  f("data.cache_dir", d.cache_dir,
    "where decoded-image caches go when root is read-only; empty = ~/.cache/vit");
  f("data.download", d.download,
    "vit train and vit data download the dataset's official archive into root when root lacks "
    "it (vit data --download always does)");
  f("data.url", d.url,
    "the archive's URL instead of the official one (a mirror, file://...); for mnist and "
    "fashion-mnist the folder URL that the four file names are appended to; empty = official");
  f("data.sha256", d.sha256,
    "SHA-256 of the file at data.url (mnist, fashion-mnist: one per file, comma-separated, in "
    "the order train images, train labels, test images, test labels); empty = not verified");

  f("data.stream", d.stream,
    "read and decode the images every epoch on data.workers threads instead of holding the "
    "decoded dataset in memory; auto: when data.augment.random_resized_crop is set, for "
    "webdataset, or when the decoded dataset would exceed data.memory_budget_mb");
  f("data.memory_budget_mb", d.memory_budget_mb,
    "decoded datasets larger than this stream (data.stream auto); 0 = a quarter of the "
    "machine's memory");
  f("data.workers", d.workers, "streaming: decode threads, 0..1024; 0 = one per core");
  f("data.prefetch_batches", d.prefetch_batches,
    "streaming: batches decoded ahead of the trainer, 0..1024 (memory: this many batches); 0 = "
    "2 on the CPU, where a step takes far longer than decoding a batch, 4 on CUDA");
  f("data.crop_pct", d.crop_pct,
    "streaming evaluation: the shorter side resized to image_size / crop_pct, then the centre "
    "image_size square (timm's crop_pct), (0, 1]");
  f("data.train_shards", d.train_shards,
    "webdataset: the training shards, a brace pattern under root (train-{000000..000146}.tar)");
  f("data.val_shards", d.val_shards, "webdataset: the validation shards (early stopping, best.pt)");
  f("data.test_shards", d.test_shards,
    "webdataset: the test shards, used once at the end; empty = no test split");
  f("data.shuffle_buffer", d.shuffle_buffer,
    "webdataset: training samples shuffled together (the shard order is shuffled too), "
    "1..1000000");

  auto& t = c.train;
  f("train.batch_size", t.batch_size, "images per step (the global batch under torchrun)");
  f("train.eval_batch_size", t.eval_batch_size,
    "images per validation or test batch; 0 = 2 x batch_size");
  f("train.epochs", t.epochs, "most epochs to train");
  f("train.optimizer", t.optimizer, "the update rule: AdamW, or SGD with momentum");
  f("train.lr", t.lr, "peak learning rate, after the warmup, > 0");
  f("train.min_lr", t.min_lr, "floor of the cosine decay, 0..lr");
  f("train.momentum", t.momentum, "SGD's momentum, [0, 1)");
  f("train.betas", t.betas, "AdamW's two betas, each in [0, 1)");
  f("train.weight_decay", t.weight_decay,
    "decoupled weight decay, on weight matrices only (not biases, norms, class token, position "
    "embedding)");
  f("train.warmup_epochs", t.warmup_epochs, "linear warmup, in epochs (fractions allowed)");
  f("train.label_smoothing", t.label_smoothing, "label smoothing of the cross-entropy, [0, 1)");
  f("train.grad_clip", t.grad_clip, "largest global gradient norm; 0 = off");
  f("train.early_stop_patience", t.early_stop_patience,
    "validations without improvement before stopping; 0 = never stop early");
  f("train.early_stop_min_delta", t.early_stop_min_delta,
    "improvement of the validation accuracy (a fraction) that counts");
  f("train.validate_every", t.validate_every, "steps between validations; 0 = once per epoch");
  f("train.precision", t.precision,
    "autocast precision; auto picks bf16 where the CPU or GPU computes it, fp16 on GPUs "
    "before compute capability 8.0, fp32 elsewhere; fp16 needs CUDA");
  f("train.log_every_s", t.log_every_s,
    "seconds between plain progress lines when the output is not a terminal");
  f("train.tensorboard", t.tensorboard,
    "write TensorBoard events (events.out.tfevents.*) into the run folder: every metrics.jsonl "
    "field, and the training loss, lr and images/s every train.log_every_s");
  f("train.snapshot_every", t.snapshot_every,
    "epochs between snapshots (snapshots/epoch-NNN.pt in the run folder, for the analyses "
    "across training); 0 = off");
  f("train.cuda_graph", t.cuda_graph,
    "on CUDA, replay the training step from a CUDA graph (not under torchrun or --profile)");
  f("train.bf16_activations", t.bf16_activations,
    "on CUDA under bf16: activations, LayerNorm and the residual stream in bf16 end to end, "
    "from bf16 copies of every parameter; false = autocast (fp32 LayerNorm and residual stream)");
  f("train.init", t.init,
    "weights to start from: a vit .pt or a timm .safetensors; empty = none (vit train --init)");
  f("train.init_strict", t.init_strict,
    "every model tensor from the file, and every file tensor used");
  f("train.init_new_head", t.init_new_head,
    "a zero head even when num_classes matches (a new task)");
  f("train.freeze", t.freeze, "none | backbone | N (the embeddings and the first N blocks)");
  f("train.layer_decay", t.layer_decay,
    "layer-wise learning-rate decay, lr x decay^(depth + 1 - layer), (0, 1]; 1 = off");
  f("train.head_lr_scale", t.head_lr_scale, "the head's learning rate is lr x this, > 0");
  f("train.dist_backend", t.dist_backend,
    "the collectives' backend under torchrun; auto: nccl on CUDA, gloo on the CPU");
  f("train.dist_timeout_s", t.dist_timeout_s,
    "a collective that waits longer fails (a rank died), seconds, > 0");
  f("train.dist_bucket_mb", t.dist_bucket_mb, "gradient all-reduce bucket in MiB, > 0");

  auto& a = c.analysis;
  f("analysis.head_fusion", a.head_fusion, "rollout: how a layer's heads combine");
  f("analysis.discard_ratio", a.discard_ratio,
    "rollout: fraction of the weakest patch links dropped per layer, [0, 1)");
  f("analysis.rollout_samples", a.rollout_samples,
    "rollout: validation images drawn when no --images are given");
  f("analysis.distance_samples", a.distance_samples, "attention distance: images averaged");
  f("analysis.renormalize", a.renormalize,
    "attention distance: renormalise each row after dropping the class token");
}

std::vector<std::string> known_paths() {
  std::vector<std::string> paths;
  Config c;
  for_each_field(c, [&](const char* path, auto&, const char*) { paths.emplace_back(path); });
  return paths;
}

// Every dotted prefix of a field path: "model", "data", "data.augment", ...
std::set<std::string> section_paths() {
  std::set<std::string> sections;
  for (const auto& path : known_paths()) {
    for (size_t dot = path.find('.'); dot != std::string::npos; dot = path.find('.', dot + 1))
      sections.insert(path.substr(0, dot));
  }
  return sections;
}

// Gives mean, std and hflip the dataset's defaults, except those given explicitly.
void apply_dataset_defaults(DataConfig& d) {
  auto [mean, stdev] = dataset_norm_defaults(d.dataset);
  if (!d.mean_given) d.mean = std::move(mean);
  if (!d.std_given) d.std = std::move(stdev);
  if (!d.hflip_given) d.augment.hflip = dataset_hflip_default(d.dataset);
}

// The first key of a section, in for_each_field's order, to show as an example.
std::string first_key_of(const std::string& section) {
  for (const auto& path : known_paths()) {
    if (path.compare(0, section.size() + 1, section + ".") == 0) return path;
  }
  return section;
}

json::json_pointer pointer_of(const std::string& dotted) {
  std::string p = "/" + dotted;
  std::replace(p.begin(), p.end(), '.', '/');
  return json::json_pointer(p);
}

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j)
    row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] != b[j - 1] ? 1 : 0)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

// The closest valid key among the siblings of `path` (the keys and sections
// that share its parent), so "model.depht" finds "model.depth" and "modle"
// finds "model".
std::string closest_path(const std::string& path) {
  const auto dot = path.rfind('.');
  const std::string parent = dot == std::string::npos ? "" : path.substr(0, dot + 1);
  const std::string leaf = path.substr(parent.size());
  std::set<std::string> siblings;
  for (const auto& known : known_paths()) {
    if (known.compare(0, parent.size(), parent) != 0) continue;
    const std::string rest = known.substr(parent.size());
    siblings.insert(rest.substr(0, rest.find('.')));
  }
  if (siblings.empty()) return closest_path(parent.substr(0, parent.size() - 1));
  std::string best;
  size_t best_score = std::numeric_limits<size_t>::max();
  for (const auto& sibling : siblings) {
    const size_t score = edit_distance(leaf, sibling);
    if (score < best_score) best_score = score, best = sibling;
  }
  return parent + best;
}

std::string type_name(const json& v) {
  return v.type_name();
}

std::string where_text(const std::string& path, const json& v) {
  return "config key '" + path + "': got " + type_name(v) + " " + v.dump();
}

void read_value(const std::string& path, const json& v, std::string& out) {
  if (!v.is_string()) throw Error(where_text(path, v) + ", expected a string");
  out = v.get<std::string>();
}
template <typename E, typename = std::enable_if_t<std::is_enum_v<E>>>
void read_value(const std::string& path, const json& v, E& out) {
  if (!v.is_string()) throw Error(where_text(path, v) + ", expected a string");
  out = enum_named<E>(v.get<std::string>(), path);
}
void read_value(const std::string& path, const json& v, bool& out) {
  if (!v.is_boolean()) throw Error(where_text(path, v) + ", expected true or false");
  out = v.get<bool>();
}
void read_value(const std::string& path, const json& v, int64_t& out) {
  if (!v.is_number_integer()) throw Error(where_text(path, v) + ", expected an integer");
  if (v.is_number_unsigned() && v.get<uint64_t>() > uint64_t(std::numeric_limits<int64_t>::max()))
    throw Error(where_text(path, v) + ", expected an integer below 2^63");
  out = v.get<int64_t>();
}
void read_value(const std::string& path, const json& v, uint64_t& out) {
  if (!v.is_number_integer() ||
      (v.is_number_integer() && !v.is_number_unsigned() && v.get<int64_t>() < 0))
    throw Error(where_text(path, v) + ", expected a non-negative integer");
  out = v.get<uint64_t>();
}
void read_value(const std::string& path, const json& v, double& out) {
  if (!v.is_number()) throw Error(where_text(path, v) + ", expected a number");
  out = v.get<double>();
}
void read_value(const std::string& path, const json& v, std::vector<double>& out) {
  if (!v.is_array()) throw Error(where_text(path, v) + ", expected a list of numbers");
  std::vector<double> values;
  for (const auto& item : v) {
    if (!item.is_number()) throw Error(where_text(path, v) + ", expected a list of numbers");
    values.push_back(item.get<double>());
  }
  out = std::move(values);
}

void read_value(const std::string& path, const json& v, StreamMode& out) {
  if (v.is_boolean()) {
    out = v.get<bool>() ? StreamMode::kOn : StreamMode::kOff;
  } else if (v.is_string() && v.get<std::string>() == "auto") {
    out = StreamMode::kAuto;
  } else {
    throw Error(where_text(path, v) + ", expected \"auto\", true or false");
  }
}
// null (off), or an object with "scale" and "ratio", each optional.
void read_value(const std::string& path, const json& v, std::optional<RandomResizedCrop>& out) {
  if (v.is_null()) {
    out.reset();
    return;
  }
  if (!v.is_object())
    throw Error(where_text(path, v) +
                ", expected null or an object such as {\"scale\": [0.08, 1.0], \"ratio\": "
                "[0.75, 1.3333]}");
  RandomResizedCrop crop;
  for (const auto& [key, value] : v.items()) {
    if (key == "scale")
      read_value(path + ".scale", value, crop.scale);
    else if (key == "ratio")
      read_value(path + ".ratio", value, crop.ratio);
    else
      throw Error("unknown config key '" + path + "." + key + "'; expected scale or ratio");
  }
  out = crop;
}

// Rejects keys that are not config fields, naming the closest valid one.
void check_known_keys(const json& j, const std::string& prefix, const std::set<std::string>& leaves,
                      const std::set<std::string>& sections) {
  if (!j.is_object()) {
    throw Error("config" + (prefix.empty() ? std::string() : " section '" + prefix + "'") +
                ": got " + type_name(j) + ", expected a JSON object");
  }
  for (const auto& [key, value] : j.items()) {
    const std::string path = prefix.empty() ? key : prefix + "." + key;
    if (sections.count(path)) {
      check_known_keys(value, path, leaves, sections);
    } else if (!leaves.count(path)) {
      throw Error("unknown config key '" + path + "'; did you mean '" + closest_path(path) + "'?");
    }
  }
}

void check_all_keys(const json& j) {
  const auto paths = known_paths();
  check_known_keys(j, "", std::set<std::string>(paths.begin(), paths.end()), section_paths());
}

// train.freeze's forms; nullopt: none of them.
std::optional<FreezePlan> parsed_freeze(const std::string& freeze) {
  if (freeze == "none") return FreezePlan{};
  if (freeze == "backbone") return FreezePlan{FreezePlan::Kind::kBackbone, 0};
  const bool digits =
      !freeze.empty() && freeze.size() <= 7 &&
      std::all_of(freeze.begin(), freeze.end(), [](char ch) { return ch >= '0' && ch <= '9'; });
  if (!digits) return std::nullopt;
  return FreezePlan{FreezePlan::Kind::kBlocks, std::stoll(freeze)};
}

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
  require_range("model.num_classes", m.num_classes, 2, kMaxClasses);
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
  validate_analysis(analysis);
}

json config_to_json(const Config& c) {
  json j = json::object();
  for_each_field(c, [&](const char* path, const auto& value, const char*) {
    j[pointer_of(path)] = json_of(value);
  });
  return j;
}

std::string config_to_json_string(const Config& c) {
  return config_to_json(c).dump(2) + "\n";
}

Config config_from_json(const json& j) {
  check_all_keys(j);
  Config c;
  for_each_field(c, [&](const char* path, auto& value, const char*) {
    const auto pointer = pointer_of(path);
    if (j.contains(pointer)) read_value(path, j.at(pointer), value);
  });
  // A config that changes the dataset but not the normalisation (or flip)
  // gets that dataset's defaults instead of CIFAR-10's.
  c.data.mean_given = j.contains(pointer_of("data.mean"));
  c.data.std_given = j.contains(pointer_of("data.std"));
  c.data.hflip_given = j.contains(pointer_of("data.augment.hflip"));
  apply_dataset_defaults(c.data);
  return c;
}

void apply_override(Config& c, const std::string& assignment) {
  const auto eq = assignment.find('=');
  if (eq == std::string::npos || eq == 0)
    throw Error("--set '" + assignment + "': expected KEY=VALUE, e.g. --set model.depth=8");
  const std::string key = assignment.substr(0, eq);
  const std::string text = assignment.substr(eq + 1);
  bool found = false;
  for_each_field(c, [&](const char* path, auto& value, const char*) {
    if (key != path) return;
    found = true;
    using T = std::decay_t<decltype(value)>;
    if constexpr (std::is_same_v<T, std::string>) {
      value = text;
    } else if constexpr (std::is_enum_v<T>) {
      value = enum_named<T>(text, key);
    } else {
      const json parsed = json::parse(text, nullptr, /*allow_exceptions=*/false);
      if (parsed.is_discarded())
        throw Error("--set " + key + ": '" + text +
                    "' is not a valid value (use JSON: 8, 0.5, true, [0.5, 0.5])");
      read_value(key, parsed, value);
    }
  });
  if (!found) {
    // "model" is the closest path to itself, so a section gets its own hint.
    if (section_paths().count(key))
      throw Error("--set: '" + key + "' is a section; set one of its keys, e.g. " +
                  first_key_of(key));
    throw Error("--set: unknown config key '" + key + "'; did you mean '" + closest_path(key) +
                "'?");
  }
  // Explicit values stay; the rest follow the dataset, whichever --set comes first.
  if (key == "data.mean") c.data.mean_given = true;
  if (key == "data.std") c.data.std_given = true;
  if (key == "data.augment.hflip") c.data.hflip_given = true;
  if (key == "data.dataset") apply_dataset_defaults(c.data);
}

Config parse_config_string(const std::string& text, const std::string& source_name) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception& e) {  // parse_error, or out_of_range for a number like 1e908
    throw Error(source_name + ": not valid JSON (" + std::string(e.what()) + ")");
  }
  try {
    return config_from_json(j);
  } catch (const Error& e) {
    throw Error(source_name + ": " + e.what());
  }
}

Config load_config(const std::string& path, const std::vector<std::string>& overrides) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(path + ": cannot open config file");
  std::stringstream buffer;
  buffer << in.rdbuf();
  Config c = parse_config_string(buffer.str(), path);
  for (const auto& assignment : overrides)
    apply_override(c, assignment);
  try {
    c.validate();
  } catch (const Error& e) {
    throw Error(path + ": " + e.what());
  }
  return c;
}

std::pair<std::vector<double>, std::vector<double>> dataset_norm_defaults(DatasetKind dataset) {
  switch (dataset) {
    case DatasetKind::kCifar10:
      break;
    case DatasetKind::kCifar100:
      return {{0.5071, 0.4865, 0.4409}, {0.2673, 0.2564, 0.2762}};
    case DatasetKind::kMnist:
      return {{0.1307}, {0.3081}};
    case DatasetKind::kFashionMnist:
      return {{0.2860}, {0.3530}};
    case DatasetKind::kTinyImagenet:
      return {{0.4802, 0.4481, 0.3975}, {0.2770, 0.2691, 0.2821}};
    case DatasetKind::kImageFolder:
      return {{0.5, 0.5, 0.5}, {0.5, 0.5, 0.5}};
    case DatasetKind::kSynthetic:  // uniform bytes: mean 127.5/255, std 73.9/255
      return {{0.5, 0.5, 0.5}, {0.2898, 0.2898, 0.2898}};
    case DatasetKind::kWebdataset:  // ImageNet's, as timm's and DeiT's recipes use
      return {{0.485, 0.456, 0.406}, {0.229, 0.224, 0.225}};
  }
  return {{0.4914, 0.4822, 0.4465}, {0.2470, 0.2435, 0.2616}};  // CIFAR-10
}

bool dataset_hflip_default(DatasetKind dataset) {
  return dataset != DatasetKind::kMnist;
}

namespace {

template <typename T>
std::string type_of_value() {
  if constexpr (std::is_same_v<T, StreamMode>) return "\"auto\" or true/false";
  if constexpr (std::is_same_v<T, std::optional<RandomResizedCrop>>)
    return "null or {scale: [lo, hi], ratio: [lo, hi]}";
  if constexpr (std::is_enum_v<T>) return "string: " + enum_choices<T>();
  if constexpr (std::is_same_v<T, std::string>) return "string";
  if constexpr (std::is_same_v<T, bool>) return "true/false";
  if constexpr (std::is_same_v<T, int64_t>) return "integer";
  if constexpr (std::is_same_v<T, uint64_t>) return "integer >= 0";
  if constexpr (std::is_same_v<T, double>) return "number";
  if constexpr (std::is_same_v<T, std::vector<double>>) return "list of numbers";
  return "";
}

// A table cell: Markdown takes a bare '|' as the cell's end.
std::string cell(const std::string& text) {
  std::string out;
  for (const char ch : text) {
    if (ch == '|') out += '\\';
    out += ch;
  }
  return out;
}

std::string section_of(const std::string& path) {
  const auto dot = path.rfind('.');
  return dot == std::string::npos ? "" : path.substr(0, dot);
}

}  // namespace

std::vector<ConfigKey> config_keys() {
  std::vector<ConfigKey> keys;
  const Config defaults;
  for_each_field(defaults, [&](const char* path, const auto& value, const char* meaning) {
    using T = std::decay_t<decltype(value)>;
    keys.push_back({path, type_of_value<T>(), json_of(value).dump(), meaning});
  });
  return keys;
}

std::string config_reference_markdown() {
  std::string out =
      "# Config reference\n\n"
      "Every key of a vit config, with its type, default and meaning. All keys are optional;\n"
      "a config file gives the ones it changes, and `--set KEY=VALUE` overrides any of them\n"
      "by its dotted path. Reading is strict: an unknown key, a value of the wrong type or an\n"
      "impossible value is an error that names the key.\n\n"
      "`vit config --defaults` prints the whole default config as JSON. This page is what\n"
      "`vit config --reference` prints, from the field list in `src/config.cpp`; a test fails\n"
      "when the two disagree. `data.mean`, `data.std` and `data.augment.hflip` default per\n"
      "dataset; the defaults shown are CIFAR-10's.\n";
  std::string section = "-";
  for (const auto& key : config_keys()) {
    const std::string here = section_of(key.path);
    if (here != section) {
      section = here;
      out += "\n## " + (section.empty() ? std::string("top level") : "`" + section + "`") +
             "\n\n| key | type | default | meaning |\n|---|---|---|---|\n";
    }
    out += "| `" + key.path + "` | " + cell(key.type) + " | `" + cell(key.default_json) + "` | " +
           cell(key.meaning) + " |\n";
  }
  return out;
}

const char* name_of(Pool pool) {
  return enum_name(pool);
}

const char* name_of(Precision precision) {
  return enum_name(precision);
}

const char* name_of(DatasetKind dataset) {
  return enum_name(dataset);
}

const char* name_of(StreamMode mode) {
  return enum_name(mode);
}

std::ostream& operator<<(std::ostream& out, Pool pool) {
  return out << name_of(pool);
}

std::ostream& operator<<(std::ostream& out, Precision precision) {
  return out << name_of(precision);
}

std::ostream& operator<<(std::ostream& out, DatasetKind dataset) {
  return out << name_of(dataset);
}

Precision precision_named(const std::string& name, const std::string& key) {
  return enum_named<Precision>(name, key);
}

FreezePlan freeze_plan(const std::string& freeze) {
  const auto plan = parsed_freeze(freeze);
  if (!plan) throw Error("train.freeze is '" + freeze + "', expected none | backbone | N");
  return *plan;
}

std::optional<DeviceChoice> device_choice(const std::string& spec) {
  if (spec == "auto") return DeviceChoice{};
  if (spec == "cpu") return DeviceChoice{DeviceChoice::Kind::kCpu, 0};
  if (spec == "cuda") return DeviceChoice{DeviceChoice::Kind::kCuda, 0};
  const std::string prefix = "cuda:";
  if (spec.compare(0, prefix.size(), prefix) != 0) return std::nullopt;
  const std::string index = spec.substr(prefix.size());
  const bool digits =
      !index.empty() && index.size() <= 4 &&
      std::all_of(index.begin(), index.end(), [](char ch) { return ch >= '0' && ch <= '9'; });
  if (!digits) return std::nullopt;
  return DeviceChoice{DeviceChoice::Kind::kCuda, std::stoi(index)};
}

}  // namespace vit
