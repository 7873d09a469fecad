#pragma once
// One Config struct in four sections. Every field has a default; the JSON keys
// are the field names (docs/config.md lists them all). Reading is strict: unknown
// keys, wrong types and impossible values are errors.
#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "vit/enum_names.hpp"

namespace vit {

// Settings with a fixed set of names, parsed once when a config is read (an
// unknown name is an error there); code compares these, never the names.
// What the head reads (timm's global_pool): the class token, the mean of the
// patch tokens, or an attention pool's latent query over them (SigLIP).
enum class Pool { kCls, kMean, kMap };
// The MLP's activation (timm's act_layer): exact GELU, GELU's tanh
// approximation (SigLIP), or QuickGELU, x * sigmoid(1.702 x) (OpenAI's CLIP).
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
// A setting that a rule decides unless true or false forces it (in JSON: the
// string "auto" or a boolean): data.stream, model.no_embed_class.
enum class AutoSwitch { kAuto, kOn, kOff };
// Whether training reads its images from disk every epoch (data/stream_loader)
// instead of decoding the whole dataset into memory once.
using StreamMode = AutoSwitch;
enum class OptimizerRule { kAdamW, kSgd };       // train.optimizer: "adamw" | "sgd"
enum class PaddingMode { kZeros, kReflect };     // data.augment.padding_mode: "zeros" | "reflect"
enum class DistBackend { kAuto, kGloo, kNccl };  // train.dist_backend: "auto" | "gloo" | "nccl"
enum class HeadFusion { kMean, kMax, kMin };     // analysis.head_fusion: "mean" | "max" | "min"
// Where the validation split comes from (data.validation): an image folder's
// own val/ folder, or data.val_size training images held out; auto: the
// folder where root has train/ and val/ (and no test/), else the hold-out.
enum class ValidationSource { kAuto, kFolder, kHoldout };

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
struct EnumNames<HeadFusion> {
  static constexpr std::pair<HeadFusion, const char*> table[] = {
      {HeadFusion::kMean, "mean"}, {HeadFusion::kMax, "max"}, {HeadFusion::kMin, "min"}};
};

// The name (enum_name), for logs and test messages.
std::ostream& operator<<(std::ostream& out, Pool pool);
std::ostream& operator<<(std::ostream& out, Precision precision);
std::ostream& operator<<(std::ostream& out, DatasetKind dataset);

// Upper bounds that validate() enforces. They are far above any model that fits
// in memory, and low enough that the parameter and FLOP counts of `vit info`
// (int64) cannot overflow.
inline constexpr int64_t kMaxImageSize = 16384;    // pixels per side
inline constexpr int64_t kMaxPatches = 65536;      // patches per image (a 256 x 256 grid)
inline constexpr int64_t kMaxWidth = 65536;        // dim, dim_head, heads * head width, mlp_dim
inline constexpr int64_t kMaxDepth = 1024;         // transformer blocks
inline constexpr int64_t kMaxRegisters = 256;      // register tokens
inline constexpr int64_t kMaxClasses = 1'000'000;  // classifier outputs
inline constexpr int64_t kMaxThreads = 1024;       // `threads` and --threads

// The architecture, as timm's VisionTransformer arguments (docs/models.md):
// each key's meaning is in the config's field table (src/config/fields.hpp,
// docs/config.md). Sizes are counts, widths and pixels.
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
  // The tokens before the patches, in timm's order: the class token, the
  // distillation token, the registers.
  int64_t prefix_tokens() const { return int64_t{class_token} + int64_t{distilled} + registers; }
  int64_t tokens() const { return prefix_tokens() + num_patches(); }  // N
  // Whether the prefix tokens go in front unembedded, pos_embed covering the
  // patches alone: "auto" is on exactly when there are registers (timm's
  // register models).
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

// torchvision's RandomResizedCrop, taken from the original image: a box of a
// random share of its area and aspect ratio, resized to the model's size.
struct RandomResizedCrop {
  std::vector<double> scale = {0.08, 1.0};      // share of the image's area, (0, 1]
  std::vector<double> ratio = {0.75, 4.0 / 3};  // width / height, > 0
};

struct AugmentConfig {
  // ImageNet-style training: a random resized crop of the original image
  // instead of the pad-and-crop (which it replaces); unset (JSON null) = off.
  // Always streams: the in-memory path holds images at the model's size.
  std::optional<RandomResizedCrop> random_resized_crop;
  int64_t crop_padding = 4;  // pixels padded before a random crop, < image_size; 0 = off
  PaddingMode padding_mode = PaddingMode::kZeros;
  bool hflip = true;                   // random horizontal flip; per-dataset default (mnist: off)
  int64_t randaugment_ops = 0;         // RandAugment-style ops per image; 0 = off
  double randaugment_magnitude = 9.0;  // 0..30, RandAugment's scale
  double mixup_alpha = 0.0;            // Beta(a, a) for mixup; 0 = off
  double cutmix_alpha = 0.0;           // Beta(a, a) for cutmix; 0 = off
  double mix_prob = 1.0;               // probability that a batch is mixed at all
  double random_erasing = 0.0;         // probability of erasing one random box of an image
};

struct DataConfig {
  // cifar10 | cifar100 | mnist | fashion-mnist | tiny-imagenet | image-folder
  DatasetKind dataset = DatasetKind::kCifar10;
  std::string root = "data/cifar-10-batches-bin";  // folder holding the dataset's files
  int64_t val_size = 5000;  // training images held out for validation (stratified)
  ValidationSource validation = ValidationSource::kAuto;  // val/ folder or hold-out
  std::vector<double> mean = {0.4914, 0.4822, 0.4465};    // per channel, on [0,1] pixels
  std::vector<double> std = {0.2470, 0.2435, 0.2616};     // per channel; both default per dataset
  AugmentConfig augment;
  int64_t limit_train = 0;    // keep N training images (seeded, stratified); 0 = all
  int64_t limit_test = 0;     // keep N test images (seeded, stratified); 0 = all
  bool skip_corrupt = false;  // skip unreadable images with a warning instead of failing
  bool drop_last = true;      // training: the last partial batch is left out of each epoch
  std::string cache_dir =
      "";  // where decoded-image caches go if root is read-only; "" = ~/.cache/vit
  // Downloading the dataset into root (data/download/dataset_download.hpp).
  bool download = false;    // vit train and vit data fetch the official archive when root lacks it
  std::string url = "";     // overrides the archive's URL (MNIST-style: the folder of the 4 files)
  std::string sha256 = "";  // SHA-256 of the file at url (MNIST-style: 4, comma-separated)
  // Streaming (data/stream_loader.hpp): images read and decoded every epoch.
  StreamMode stream = StreamMode::kAuto;  // auto: when random_resized_crop is set, the dataset is
                                          // webdataset, or it would not fit memory_budget_mb
  int64_t memory_budget_mb = 0;   // decoded datasets above this stream; 0 = a quarter of RAM
  int64_t workers = 0;            // decode threads; 0 = one per core
  int64_t prefetch_batches = 0;   // batches decoded ahead; 0 = 2 on the CPU, 4 on CUDA
  double crop_pct = 0.875;        // evaluation: shorter side to image_size / crop_pct, centre crop
  std::string train_shards = "";  // webdataset: brace pattern under root, "train-{000..146}.tar"
  std::string val_shards = "";    // webdataset: the validation split's shards
  std::string test_shards = "";   // webdataset: the test split's shards; "" = no test split
  int64_t shuffle_buffer = 2000;  // webdataset: samples shuffled together in a buffer, >= 1
  int64_t shuffle_buffer_mb = 1024;  // webdataset: and at most this many MiB of them

  // Not config keys: whether mean, std and augment.hflip were given in a file
  // or by --set. The ones left out follow `dataset`, even when --set changes
  // the dataset after the file was read. Code that fills these fields by hand
  // should set the matching flag, or a later "--set data.dataset=..." resets them.
  bool mean_given = false;
  bool std_given = false;
  bool hflip_given = false;
};

// An exponential moving average of the weights (timm's ModelEmaV3),
// evaluated beside them; train.ema, unset (JSON null) = off.
struct ModelEmaConfig {
  double decay = 0.9998;    // the average's decay per optimizer step, (0, 1)
  bool warmup = false;      // timm's warmup: min(decay, 1 - t^(-2/3)) after optimizer step t
  bool select_best = true;  // best.pt keeps the better of the live and the average weights
};

// Which blocks keep only their input in the forward pass and recompute the
// rest in the backward pass (train.grad_checkpointing).
struct GradCheckpointing {
  int64_t every = 0;  // 0: none; 1: every block (JSON true); k: blocks 0, k, 2k, ...
  bool covers(int64_t block) const { return every > 0 && block % every == 0; }
};

struct TrainConfig {
  int64_t batch_size = 128;
  int64_t eval_batch_size = 0;  // 0 = 2 * batch_size
  int64_t epochs = 100;
  OptimizerRule optimizer = OptimizerRule::kAdamW;  // SGD: with momentum
  double lr = 1e-3;                                 // peak learning rate after warmup
  double min_lr = 1e-6;                             // floor of the cosine schedule
  double momentum = 0.9;                            // SGD only
  std::vector<double> betas = {0.9, 0.999};         // AdamW only
  double weight_decay = 0.05;  // weights only; not biases, norms, cls token, pos embedding
  double warmup_epochs = 5;    // linear warmup, in epochs (fractions allowed)
  double label_smoothing = 0.1;
  double grad_clip = 1.0;             // max global gradient norm; 0 = off
  int64_t early_stop_patience = 10;   // validations without improvement; 0 = never stop early
  double early_stop_min_delta = 0.0;  // required improvement of val accuracy (fraction)
  int64_t validate_every = 0;         // steps between validations; 0 = once per epoch
  // "auto" (bf16 where the CPU or GPU computes it, fp16 on pre-Ampere GPUs,
  // else fp32) | "fp32" | "bf16" (CPU, CUDA) | "fp16" (CUDA)
  Precision precision = Precision::kAuto;
  double log_every_s = 10.0;   // seconds between plain progress lines off a terminal
  bool tensorboard = true;     // TensorBoard events in the run folder (train/tensorboard_log.hpp)
  int64_t snapshot_every = 0;  // epochs between snapshots/epoch-NNN.pt in the run folder; 0 = off
  // On CUDA, replay the training step from a CUDA graph (train/cuda_graph_step.hpp),
  // except under torchrun or --profile; ignored on the CPU.
  bool cuda_graph = true;
  // On CUDA under bf16: activations, LayerNorm and the residual stream in bf16
  // end to end, read from bf16 copies of every parameter (fp32 master weights
  // in the optimizer) instead of autocast, which keeps LayerNorm and the
  // residual stream in fp32 with casts around them. Ignored on the CPU and
  // under fp32 or fp16 (train/weight_mirror.hpp).
  bool bf16_activations = true;
  // Fine-tuning (vit train --init; weights/pretrained.hpp).
  std::string init = "";        // weights to start from: a vit .pt or timm .safetensors; "" = none
  bool init_strict = false;     // every model tensor from the file, every file tensor used
  bool init_new_head = false;   // zero the head even when num_classes matches (a new task)
  std::string freeze = "none";  // "none" | "backbone" | "N" (embeddings + first N blocks)
  double layer_decay = 1.0;     // lr x decay^(depth + 1 - layer), BEiT/timm; 1 = off, (0, 1]
  double head_lr_scale = 1.0;   // the head's lr = lr x this (same schedule), > 0
  // Data-parallel training under torchrun (train/distributed.hpp); ignored when running alone.
  DistBackend dist_backend = DistBackend::kAuto;  // auto: nccl on CUDA, gloo on the CPU
  double dist_timeout_s = 300;  // a collective that waits longer fails (a rank died), > 0
  double dist_bucket_mb = 25;   // gradient all-reduce bucket, MiB (DDP's default), > 0
  // What does not fit: micro-batches, recomputed blocks, and the weights' average.
  int64_t accum_steps = 1;  // micro-batches per optimizer step; divides batch_size
  GradCheckpointing grad_checkpointing;
  std::optional<ModelEmaConfig> ema;
  // The training loader's batch: one micro-batch of an optimizer step.
  int64_t micro_batch_size() const { return batch_size / accum_steps; }
};

struct AnalysisConfig {
  HeadFusion head_fusion = HeadFusion::kMean;  // rollout
  double discard_ratio = 0.0;      // rollout: fraction of weakest patch links dropped per layer
  int64_t rollout_samples = 16;    // images drawn from the validation split for rollout
  int64_t distance_samples = 128;  // images averaged for mean attention distance
  bool renormalize = false;        // attention distance: renormalise rows after dropping cls
};

struct Config {
  std::string name = "cifar10";  // run name; run folders are runs/<name>-<timestamp>
  uint64_t seed = 0;
  std::string device = "auto";  // "auto" | "cpu" | "cuda" | "cuda:N"
  int64_t threads = 0;          // LibTorch intra-op threads, 0..1024; 0 = all cores
  ModelConfig model;
  DataConfig data;
  TrainConfig train;
  AnalysisConfig analysis;

  // Throws vit::Error naming the first impossible value.
  void validate() const;
};

// What train.freeze (validated) names: nothing, every parameter but the head's
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

// Strict JSON reading: every key optional, unknown keys rejected with the
// closest valid dotted path, wrong types rejected.
Config config_from_json(const nlohmann::json& j);
nlohmann::json config_to_json(const Config& c);
std::string config_to_json_string(const Config& c);  // pretty, 2-space indent

// Apply one "--set a.b=value" override. The value is parsed as JSON when the
// key holds a number, bool or list; a string key takes the text as is.
// Setting data.dataset also resets the per-dataset defaults (mean, std, hflip)
// that were not given explicitly.
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

// Every key with its type, default and meaning, as Markdown: what `vit
// config --reference` prints and docs/config.md holds.
std::string config_reference_markdown();

// Per-dataset normalisation defaults: (mean, std).
std::pair<std::vector<double>, std::vector<double>> dataset_norm_defaults(DatasetKind dataset);
// Per-dataset default of data.augment.hflip: off for digits, which a mirror
// turns into other shapes; on for everything else.
bool dataset_hflip_default(DatasetKind dataset);

}  // namespace vit
