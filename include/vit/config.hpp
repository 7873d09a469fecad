#pragma once
// One Config struct in four sections. Every field has a default; the JSON keys are
// the field names, whose meanings are in the field table (src/config/fields.hpp,
// docs/config.md). Reading is strict: unknown keys, wrong types and bad values are errors.
#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "vit/enum_names.hpp"

namespace vit {

// Settings with a fixed set of names, parsed once when a config is read; code
// compares these, never the names.
enum class Pool { kCls, kMean, kMap };
enum class Activation { kGelu, kGeluTanh, kQuickGelu };
enum class Precision { kAuto, kFp32, kBf16, kFp16 };
enum class DatasetKind {
  kCifar10,
  kCifar100,
  kMnist,
  kFashionMnist,
  kTinyImagenet,
  kImageFolder,
  kSynthetic,
  kWebdataset
};
// A setting that a rule decides unless true or false forces it (in JSON: "auto"
// or a boolean): data.stream, model.no_embed_class.
enum class AutoSwitch { kAuto, kOn, kOff };
using StreamMode = AutoSwitch;                   // data.stream (data/stream_loader.hpp)
enum class OptimizerRule { kAdamW, kSgd };       // train.optimizer: "adamw" | "sgd"
enum class PaddingMode { kZeros, kReflect };     // data.augment.padding_mode: "zeros" | "reflect"
enum class DistBackend { kAuto, kGloo, kNccl };  // train.dist_backend: "auto" | "gloo" | "nccl"
enum class HeadFusion { kMean, kMax, kMin };     // analysis.head_fusion: "mean" | "max" | "min"
enum class ValidationSource { kAuto, kFolder, kHoldout };  // data.validation
// data.crop_mode and data.interpolation: how evaluation takes an image to the model's
// input, in timm's (pretrained_cfg's) names (data/image_transform.hpp).
enum class CropMode { kAuto, kCenter, kSquash };
enum class Interpolation { kArea, kBilinear, kBicubic };

template <>
struct EnumNames<Pool> {
  // timm's names (token, avg) read as vit's.
  static constexpr std::pair<Pool, const char*> table[] = {{Pool::kCls, "cls"},
                                                           {Pool::kMean, "mean"},
                                                           {Pool::kMap, "map"},
                                                           {Pool::kCls, "token"},
                                                           {Pool::kMean, "avg"}};
};
template <>
struct EnumNames<Activation> {
  static constexpr std::pair<Activation, const char*> table[] = {
      {Activation::kGelu, "gelu"},
      {Activation::kGeluTanh, "gelu_tanh"},
      {Activation::kQuickGelu, "quick_gelu"}};
};
template <>
struct EnumNames<Precision> {
  static constexpr std::pair<Precision, const char*> table[] = {{Precision::kAuto, "auto"},
                                                                {Precision::kFp32, "fp32"},
                                                                {Precision::kBf16, "bf16"},
                                                                {Precision::kFp16, "fp16"}};
};
template <>
struct EnumNames<DatasetKind> {
  static constexpr std::pair<DatasetKind, const char*> table[] = {
      {DatasetKind::kCifar10, "cifar10"},
      {DatasetKind::kCifar100, "cifar100"},
      {DatasetKind::kMnist, "mnist"},
      {DatasetKind::kFashionMnist, "fashion-mnist"},
      {DatasetKind::kTinyImagenet, "tiny-imagenet"},
      {DatasetKind::kImageFolder, "image-folder"},
      {DatasetKind::kSynthetic, "synthetic"},
      {DatasetKind::kWebdataset, "webdataset"}};
};
template <>
struct EnumNames<AutoSwitch> {
  static constexpr std::pair<AutoSwitch, const char*> table[] = {
      {AutoSwitch::kAuto, "auto"}, {AutoSwitch::kOn, "true"}, {AutoSwitch::kOff, "false"}};
};
template <>
struct EnumNames<OptimizerRule> {
  static constexpr std::pair<OptimizerRule, const char*> table[] = {
      {OptimizerRule::kAdamW, "adamw"}, {OptimizerRule::kSgd, "sgd"}};
};
template <>
struct EnumNames<PaddingMode> {
  static constexpr std::pair<PaddingMode, const char*> table[] = {
      {PaddingMode::kZeros, "zeros"}, {PaddingMode::kReflect, "reflect"}};
};
template <>
struct EnumNames<DistBackend> {
  static constexpr std::pair<DistBackend, const char*> table[] = {
      {DistBackend::kAuto, "auto"}, {DistBackend::kGloo, "gloo"}, {DistBackend::kNccl, "nccl"}};
};
template <>
struct EnumNames<ValidationSource> {
  static constexpr std::pair<ValidationSource, const char*> table[] = {
      {ValidationSource::kAuto, "auto"},
      {ValidationSource::kFolder, "folder"},
      {ValidationSource::kHoldout, "holdout"}};
};
template <>
struct EnumNames<CropMode> {
  static constexpr std::pair<CropMode, const char*> table[] = {
      {CropMode::kAuto, "auto"}, {CropMode::kCenter, "center"}, {CropMode::kSquash, "squash"}};
};
template <>
struct EnumNames<Interpolation> {
  static constexpr std::pair<Interpolation, const char*> table[] = {
      {Interpolation::kArea, "area"},
      {Interpolation::kBilinear, "bilinear"},
      {Interpolation::kBicubic, "bicubic"}};
};
template <>
struct EnumNames<HeadFusion> {
  static constexpr std::pair<HeadFusion, const char*> table[] = {
      {HeadFusion::kMean, "mean"}, {HeadFusion::kMax, "max"}, {HeadFusion::kMin, "min"}};
};

// The name (enum_name), for logs and test messages.
std::ostream& operator<<(std::ostream& out, Pool pool);
std::ostream& operator<<(std::ostream& out, Precision precision);
std::ostream& operator<<(std::ostream& out, DatasetKind dataset);

// Upper bounds that validate() enforces: far above any model that fits in memory,
// low enough that `vit info`'s int64 parameter and FLOP counts cannot overflow.
inline constexpr int64_t kMaxImageSize = 16384;    // pixels per side
inline constexpr int64_t kMaxPatches = 65536;      // patches per image (a 256 x 256 grid)
inline constexpr int64_t kMaxWidth = 65536;        // dim, dim_head, heads * head width, mlp_dim
inline constexpr int64_t kMaxDepth = 1024;         // transformer blocks
inline constexpr int64_t kMaxRegisters = 256;      // register tokens
inline constexpr int64_t kMaxClasses = 1'000'000;  // classifier outputs
inline constexpr int64_t kMaxThreads = 1024;       // `threads` and --threads

// The architecture, as timm's VisionTransformer arguments (docs/models.md).
// Sizes are counts, widths and pixels.
struct ModelConfig {
  int64_t image_size = 32;
  int64_t patch_size = 4;
  int64_t channels = 3;
  int64_t num_classes = 10;
  int64_t dim = 256;
  int64_t depth = 6;
  int64_t heads = 8;
  int64_t dim_head = 0;
  int64_t mlp_dim = 512;
  Pool pool = Pool::kCls;
  bool qkv_bias = true;
  double dropout = 0.0;
  double emb_dropout = 0.0;
  double attn_dropout = 0.0;
  double layer_norm_eps = 1e-6;
  double drop_path = 0.0;
  int64_t registers = 0;
  bool class_token = true;
  bool distilled = false;
  AutoSwitch no_embed_class = AutoSwitch::kAuto;
  bool pre_norm = false;
  bool fc_norm = false;
  double init_values = 0.0;
  Activation act_layer = Activation::kGelu;
  bool patch_bias = true;

  int64_t grid() const { return image_size / patch_size; }  // patches per side g
  int64_t num_patches() const { return grid() * grid(); }   // g*g
  // The tokens before the patches, in timm's order: class, distillation, registers.
  int64_t prefix_tokens() const { return int64_t{class_token} + int64_t{distilled} + registers; }
  int64_t tokens() const { return prefix_tokens() + num_patches(); }  // N
  // Whether pos_embed covers the patches alone (model.no_embed_class resolved).
  bool prefix_unembedded() const {
    return no_embed_class == AutoSwitch::kAuto ? registers > 0 : no_embed_class == AutoSwitch::kOn;
  }
  // pos_embed's rows before the patches'.
  int64_t embedded_prefix() const { return prefix_unembedded() ? 0 : prefix_tokens(); }
  int64_t position_rows() const { return embedded_prefix() + num_patches(); }
  int64_t head_dim() const { return dim_head > 0 ? dim_head : dim / heads; }
  int64_t inner_dim() const { return heads * head_dim(); }  // width of q, k, v
  bool layer_scale() const { return init_values != 0.0; }
  // Training draws random numbers inside the blocks: dropout or drop-path.
  bool draws_random_numbers_in_blocks() const {
    return dropout > 0 || attn_dropout > 0 || drop_path > 0;
  }
};

// data.augment.random_resized_crop (torchvision's RandomResizedCrop).
struct RandomResizedCrop {
  std::vector<double> scale = {0.08, 1.0};      // share of the image's area, (0, 1]
  std::vector<double> ratio = {0.75, 4.0 / 3};  // width / height, > 0
};

struct AugmentConfig {
  // Always streams: the in-memory path holds images at the model's size.
  std::optional<RandomResizedCrop> random_resized_crop;
  int64_t crop_padding = 4;
  PaddingMode padding_mode = PaddingMode::kZeros;
  bool hflip = true;
  int64_t randaugment_ops = 0;
  double randaugment_magnitude = 9.0;
  double mixup_alpha = 0.0;
  double cutmix_alpha = 0.0;
  double mix_prob = 1.0;
  double random_erasing = 0.0;
};

struct DataConfig {
  DatasetKind dataset = DatasetKind::kCifar10;
  std::string root = "data/cifar-10-batches-bin";
  int64_t val_size = 5000;
  ValidationSource validation = ValidationSource::kAuto;
  std::vector<double> mean = {0.4914, 0.4822, 0.4465};
  std::vector<double> std = {0.2470, 0.2435, 0.2616};
  AugmentConfig augment;
  int64_t limit_train = 0;
  int64_t limit_test = 0;
  bool skip_corrupt = false;
  bool drop_last = true;
  std::string cache_dir =
      "";  // where decoded-image caches go if root is read-only; "" = ~/.cache/vit
  // Downloading the dataset into root (data/download/dataset_download.hpp).
  bool download = false;
  std::string url = "";
  std::string sha256 = "";  // MNIST-style: 4, comma-separated
  // Streaming (data/stream_loader.hpp): images read and decoded every epoch.
  StreamMode stream = StreamMode::kAuto;
  int64_t memory_budget_mb = 0;
  int64_t workers = 0;
  int64_t prefetch_batches = 0;
  double crop_pct = 0.875;
  CropMode crop_mode = CropMode::kAuto;
  Interpolation interpolation = Interpolation::kArea;
  std::string train_shards = "";
  std::string val_shards = "";
  std::string test_shards = "";
  int64_t shuffle_buffer = 2000;
  int64_t shuffle_buffer_mb = 1024;

  // Not config keys: whether mean, std and augment.hflip were given in a file or
  // by --set; the ones left out follow `dataset`, even when --set changes it later.
  // Code that fills these by hand sets the flag, or a later --set data.dataset resets them.
  bool mean_given = false;
  bool std_given = false;
  bool hflip_given = false;
};

// How evaluation fits an image (data.crop_mode, crop_pct, interpolation), with auto
// resolved: center with a random_resized_crop, else squash at crop_pct 1 (the whole
// image, as the in-memory path keeps it).
struct EvaluationTransform {
  CropMode mode = CropMode::kSquash;  // kCenter or kSquash
  double crop_pct = 1.0;
  Interpolation interpolation = Interpolation::kArea;
};
EvaluationTransform evaluation_transform(const DataConfig& data);

// train.ema; unset (JSON null) = off.
struct ModelEmaConfig {
  double decay = 0.9998;
  bool warmup = false;
  bool select_best = true;
};

// train.grad_checkpointing.
struct GradCheckpointing {
  int64_t every = 0;  // 0: none; 1: every block (JSON true); k: blocks 0, k, 2k, ...
  bool covers(int64_t block) const { return every > 0 && block % every == 0; }
};

struct TrainConfig {
  int64_t batch_size = 128;
  int64_t eval_batch_size = 0;
  int64_t epochs = 100;
  OptimizerRule optimizer = OptimizerRule::kAdamW;
  double lr = 1e-3;
  double min_lr = 1e-6;
  double momentum = 0.9;
  std::vector<double> betas = {0.9, 0.999};
  double weight_decay = 0.05;
  double warmup_epochs = 5;
  double label_smoothing = 0.1;
  double grad_clip = 1.0;
  int64_t early_stop_patience = 10;
  double early_stop_min_delta = 0.0;
  int64_t validate_every = 0;
  Precision precision = Precision::kAuto;
  double log_every_s = 10.0;
  bool tensorboard = true;  // train/tensorboard_log.hpp
  int64_t snapshot_every = 0;
  bool cuda_graph = true;        // train/cuda_graph_step.hpp
  bool bf16_activations = true;  // train/weight_mirror.hpp
  // Fine-tuning (vit train --init; weights/pretrained.hpp).
  std::string init = "";
  bool init_strict = false;
  bool init_new_head = false;
  std::string freeze = "none";
  double layer_decay = 1.0;
  double head_lr_scale = 1.0;
  // Data-parallel training under torchrun (train/distributed.hpp); ignored when running alone.
  DistBackend dist_backend = DistBackend::kAuto;
  double dist_timeout_s = 300;
  double dist_bucket_mb = 25;  // DDP's default
  // What does not fit: micro-batches, recomputed blocks, and the weights' average.
  int64_t accum_steps = 1;
  GradCheckpointing grad_checkpointing;
  std::optional<ModelEmaConfig> ema;
  // The training loader's batch: one micro-batch of an optimizer step.
  int64_t micro_batch_size() const { return batch_size / accum_steps; }
};

struct AnalysisConfig {
  HeadFusion head_fusion = HeadFusion::kMean;
  double discard_ratio = 0.0;
  int64_t rollout_samples = 16;
  int64_t distance_samples = 128;
  bool renormalize = false;
};

struct Config {
  std::string name = "cifar10";
  uint64_t seed = 0;
  std::string device = "auto";
  int64_t threads = 0;
  ModelConfig model;
  DataConfig data;
  TrainConfig train;
  AnalysisConfig analysis;

  // Throws vit::Error naming the first impossible value.
  void validate() const;
};

// What a validated train.freeze names: nothing, every parameter but the head's
// (backbone), or the embeddings and the first `blocks` blocks (N).
struct FreezePlan {
  enum class Kind { kNone, kBackbone, kBlocks } kind = Kind::kNone;
  int64_t blocks = 0;  // kBlocks: how many
};
FreezePlan freeze_plan(const std::string& freeze);

// A device setting or --device: auto | cpu | cuda | cuda:N (N of 1 to 4
// digits). Whether the device exists is checked when a command picks it.
struct DeviceChoice {
  enum class Kind { kAuto, kCpu, kCuda } kind = Kind::kAuto;
  int index = 0;  // kCuda
};
// nullopt: not one of those forms
std::optional<DeviceChoice> device_choice(const std::string& spec);

// Strict reading: every key optional; an unknown key (named with the closest
// valid path) or a wrong type is an error.
Config config_from_json(const nlohmann::json& j);
nlohmann::json config_to_json(const Config& c);
std::string config_to_json_string(const Config& c);  // pretty, 2-space indent

// Apply one "--set a.b=value" override: JSON for a number, bool or list key, the
// text as is for a string key. Setting data.dataset also resets the per-dataset
// defaults (mean, std, hflip) that were not given explicitly.
void apply_override(Config& c, const std::string& assignment);

// File + overrides + validate(): what every command uses.
Config load_config(const std::string& path, const std::vector<std::string>& overrides = {});
Config parse_config_string(const std::string& text, const std::string& source_name);

// One config key as the reference shows it, in the field list's order.
struct ConfigKey {
  std::string path;          // dotted: "model.depth"
  std::string type;          // "string", "integer", "number", "true/false", "list of numbers"
  std::string default_json;  // the default as JSON text: 6, "cls", [0.9, 0.999]
  std::string meaning;
};
std::vector<ConfigKey> config_keys();

// Every key with its type, default and meaning, as Markdown (vit config --reference).
std::string config_reference_markdown();

// Per-dataset normalisation defaults: (mean, std).
std::pair<std::vector<double>, std::vector<double>> dataset_norm_defaults(DatasetKind dataset);
// Off for digits, which a mirror turns into other shapes; on for everything else.
bool dataset_hflip_default(DatasetKind dataset);

}  // namespace vit
