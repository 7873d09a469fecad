#pragma once
// Private to the config's units (config.cpp, json.cpp, validation.cpp,
// suggestions.cpp, reference.cpp): the one table of config fields, and what they share.
#include <cmath>
#include <limits>
#include <optional>
#include <set>
#include <string>
#include <type_traits>
#include <vector>

#include <nlohmann/json.hpp>

#include "vit/config.hpp"

namespace vit::config_detail {

using nlohmann::json;

// A setting as JSON: enums by their names, data.stream as "auto" or a
// boolean, an unset random_resized_crop or ema as null, and
// grad_checkpointing as a boolean (none, every block) or its interval.
template <typename T>
json json_of(const T& value) {
  if constexpr (std::is_same_v<T, StreamMode>) {
    if (value == StreamMode::kAuto) return "auto";
    return value == StreamMode::kOn;
  } else if constexpr (std::is_same_v<T, std::optional<RandomResizedCrop>>) {
    if (!value) return nullptr;
    return {{"scale", value->scale}, {"ratio", value->ratio}};
  } else if constexpr (std::is_same_v<T, std::optional<ModelEmaConfig>>) {
    if (!value) return nullptr;
    return {
        {"decay", value->decay}, {"warmup", value->warmup}, {"select_best", value->select_best}};
  } else if constexpr (std::is_same_v<T, GradCheckpointing>) {
    if (value.every <= 1) return value.every == 1;
    return value.every;
  } else if constexpr (std::is_enum_v<T>) {
    return enum_name(value);
  } else {
    return value;
  }
}

// The values a number may take: an interval, or whole numbers low..high. Config::validate
// checks every field that has one with a message made from it, and the reference shows it;
// `note` says what a special value means ("0 = off"). A list of numbers holds each to it.
struct Range {
  double low = -std::numeric_limits<double>::infinity();
  double high = std::numeric_limits<double>::infinity();
  bool low_open = false;
  bool high_open = false;
  bool whole = false;  // low..high, both ends included
  const char* note = "";

  bool any() const { return std::isinf(low) && std::isinf(high); }
  // Both ends finite, not whole numbers: shown as [low, high) and the like.
  bool interval() const { return !whole && !std::isinf(high); }
  bool holds(double v) const {
    return std::isfinite(v) && (low_open ? v > low : v >= low) &&
           (high_open ? v < high : v <= high);
  }
  // "0..1024", "> 0", ">= 0", "[0, 1)".
  std::string text() const;
  // The text with the note: "0..1024 (0 = all cores)".
  std::string described() const;
};

constexpr Range integers(double low, double high, const char* note = "") {
  return {low, high, false, false, true, note};
}
constexpr Range at_least(double low, const char* note = "") {
  return {low, std::numeric_limits<double>::infinity(), false, false, false, note};
}
constexpr Range above(double low, const char* note = "") {
  return {low, std::numeric_limits<double>::infinity(), true, false, false, note};
}
// [0, 1): a rate that must leave something (dropout, smoothing, momentum).
constexpr Range kRate{0, 1, false, true};
// [0, 1]: a probability.
constexpr Range kProbability{0, 1};

// The single list of config fields: (dotted path, member, meaning, and the range of a
// number). Reading, writing, overrides, the unknown-key check, the validation of ranges
// and the reference (docs/config.md) all walk this list, so a new field is one entry here.
template <class C, class F>
void for_each_field(C& c, F&& visit) {
  const auto f = [&](const char* path, auto& member, const char* meaning, Range range = {}) {
    visit(path, member, meaning, range);
  };
  f("name", c.name, "run name; run folders are runs/NAME-TIMESTAMP");
  f("seed", c.seed, "random seed of the weights, the split, the batch order and the augmentation");
  f("device", c.device,
    "auto | cpu | cuda | cuda:N (auto: GPU 0 when LibTorch sees one, else the CPU)");
  f("threads", c.threads, "LibTorch's CPU threads", integers(0, kMaxThreads, "0 = all cores"));

  auto& m = c.model;
  f("model.image_size", m.image_size, "input side in pixels, square", integers(1, kMaxImageSize));
  f("model.patch_size", m.patch_size,
    "patch side in pixels; divides image_size; at most 65536 patches", above(0));
  f("model.channels", m.channels, "1 (gray) or 3 (RGB)");
  f("model.num_classes", m.num_classes,
    "outputs of the classifier head, 2..1000000; 0 = no head, the pooled features are the output "
    "(a backbone such as DINOv2's, for the analyses that need no classes)");
  f("model.dim", m.dim, "token width D", integers(1, kMaxWidth));
  f("model.depth", m.depth, "transformer blocks L", integers(1, kMaxDepth));
  f("model.heads", m.heads, "attention heads H", integers(1, kMaxWidth));
  f("model.dim_head", m.dim_head, "width of each head", integers(0, kMaxWidth, "0 = dim / heads"));
  f("model.mlp_dim", m.mlp_dim, "hidden width of each block's MLP", integers(1, kMaxWidth));
  f("model.pool", m.pool,
    "what the head reads (timm's global_pool): the class token (cls, or timm's token), the mean "
    "of the patch tokens (mean, or avg), or an attention pool's latent query over the patch "
    "tokens (map, SigLIP's attn_pool)");
  f("model.qkv_bias", m.qkv_bias, "bias on the fused q/k/v projection (timm: true)");
  f("model.dropout", m.dropout, "dropout after the attention projection and in the MLP", kRate);
  f("model.emb_dropout", m.emb_dropout, "dropout after adding the position embedding", kRate);
  f("model.attn_dropout", m.attn_dropout, "dropout on the attention probabilities", kRate);
  f("model.layer_norm_eps", m.layer_norm_eps, "LayerNorm's epsilon (timm's ViT: 1e-6; CLIP: 1e-5)",
    above(0));
  f("model.drop_path", m.drop_path,
    "stochastic depth: each block's residual branches are dropped per image with a rate rising "
    "linearly from 0 to this at the last block (timm's drop_path_rate)",
    kRate);
  f("model.registers", m.registers,
    "learned register tokens after the class token (Darcet et al., 2024; timm's reg_tokens and "
    "reg_token), attended to but never pooled",
    integers(0, kMaxRegisters));
  f("model.class_token", m.class_token,
    "a learned class token in front of the patches (timm's class_token; false for SigLIP and "
    "timm's *_reg*_gap_* models, which pool otherwise)");
  f("model.distilled", m.distilled,
    "DeiT's distillation token after the class token, read by a second head (head_dist); the "
    "logits are the two heads' mean (timm's deit_*_distilled_*)");
  f("model.no_embed_class", m.no_embed_class,
    "the prefix tokens (class, distillation, registers) go in front unembedded and pos_embed "
    "covers the patches alone (timm's no_embed_class: DeiT III, DINOv2 with registers); "
    "\"auto\": exactly when there are registers");
  f("model.pre_norm", m.pre_norm,
    "a LayerNorm (norm_pre) on the embedded tokens before the first block (timm's pre_norm, "
    "CLIP)");
  f("model.fc_norm", m.fc_norm,
    "the final LayerNorm after pooling (fc_norm) instead of on every token (norm), as timm's "
    "fc_norm (its default with avg pooling)");
  f("model.init_values", m.init_values,
    "LayerScale (Touvron et al., 2021): each residual branch scaled per channel by a learned "
    "gamma (ls1, ls2) that starts at this value (timm's init_values; DINOv2 1e-5, DeiT III "
    "1e-6)",
    at_least(0, "0 = no LayerScale"));
  f("model.act_layer", m.act_layer,
    "the MLP's activation (timm's act_layer): gelu (exact), gelu_tanh (tanh approximation) or "
    "quick_gelu (x * sigmoid(1.702 x), OpenAI's CLIP)");
  f("model.patch_bias", m.patch_bias,
    "bias on the patch embedding's projection (timm: false with pre_norm, as in CLIP)");

  auto& d = c.data;
  f("data.dataset", d.dataset,
    "the format of data.root's files; also sets the defaults of data.mean, data.std and "
    "data.augment.hflip");
  f("data.root", d.root, "folder holding the dataset's files (synthetic: unused)");
  f("data.val_size", d.val_size,
    "training images held out for validation (stratified), under data.validation holdout",
    at_least(0));
  f("data.validation", d.validation,
    "where the validation split comes from: folder = an image folder's val/ (nothing held out, "
    "no test split), holdout = data.val_size training images (val/ or test/ is the test split); "
    "auto = folder where root has train/ and val/ and no test/, else holdout");
  f("data.mean", d.mean, "per-channel mean of [0,1] pixels for normalisation; default per dataset");
  f("data.std", d.std, "per-channel standard deviation; default per dataset", above(0));
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
    "RandAugment-style operations per image", at_least(0, "0 = off"));
  f("data.augment.randaugment_magnitude", d.augment.randaugment_magnitude,
    "RandAugment's magnitude", Range{0, 30});
  f("data.augment.mixup_alpha", d.augment.mixup_alpha, "Beta(a, a) for mixup",
    at_least(0, "0 = off"));
  f("data.augment.cutmix_alpha", d.augment.cutmix_alpha, "Beta(a, a) for CutMix",
    at_least(0, "0 = off"));
  f("data.augment.mix_prob", d.augment.mix_prob, "probability that a batch is mixed at all",
    kProbability);
  f("data.augment.random_erasing", d.augment.random_erasing,
    "probability of erasing one random box of each image with noise (timm's RandomErasing, "
    "mode pixel), after mixing",
    kProbability);
  f("data.limit_train", d.limit_train, "keep N training images (seeded, stratified)",
    at_least(0, "0 = all"));
  f("data.limit_test", d.limit_test, "keep N test images (seeded, stratified)",
    at_least(0, "0 = all"));
  f("data.drop_last", d.drop_last,
    "training: leave each epoch's last partial batch out (timm's default); false = train on it "
    "too, so every training image is seen once an epoch (under torchrun the epoch's order is "
    "padded with its first images to a multiple of the ranks, as DistributedSampler pads); "
    "validation and test never drop");
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
    "decoded datasets larger than this stream (data.stream auto)",
    at_least(0, "0 = a quarter of the machine's memory"));
  f("data.workers", d.workers, "streaming: decode threads",
    integers(0, kMaxThreads, "0 = one per core"));
  f("data.prefetch_batches", d.prefetch_batches,
    "streaming: batches decoded ahead of the trainer (memory: this many batches); a CPU step "
    "takes far longer than decoding a batch",
    integers(0, 1024, "0 = 2 on the CPU, 4 on CUDA"));
  f("data.crop_pct", d.crop_pct,
    "evaluation under crop_mode center or squash: the image resized to image_size / crop_pct, "
    "then the centre image_size square kept (timm's crop_pct)",
    Range{0, 1, true, false});
  f("data.crop_mode", d.crop_mode,
    "how evaluation (validation, test, predict and the analyses' --images) fits an image: "
    "center = its shorter side resized, the centre square kept; squash = both sides resized, "
    "the centre kept; auto = center with a random_resized_crop, else the whole image squashed "
    "to image_size (timm's crop_mode)");
  f("data.interpolation", d.interpolation,
    "evaluation's resize: area = pixel areas averaged when shrinking, bilinear when enlarging "
    "(fast: a large JPEG is decoded at a reduced scale first); bilinear, bicubic = Pillow's "
    "filters to the bit, as timm's evaluation transform (a hub folder's pretrained_cfg sets it)");
  f("data.train_shards", d.train_shards,
    "webdataset: the training shards, a brace pattern under root (train-{000000..000146}.tar)");
  f("data.val_shards", d.val_shards, "webdataset: the validation shards (early stopping, best.pt)");
  f("data.test_shards", d.test_shards,
    "webdataset: the test shards, used once at the end; empty = no test split");
  f("data.shuffle_buffer", d.shuffle_buffer,
    "webdataset: training samples shuffled together (the shard order is shuffled too)",
    integers(1, 1'000'000));
  f("data.shuffle_buffer_mb", d.shuffle_buffer_mb,
    "webdataset: the shuffle buffer's bound in MiB of encoded samples, as well as its count; "
    "it stops filling at this size (plus the one sample read last)",
    integers(1, 1 << 20));

  auto& t = c.train;
  f("train.batch_size", t.batch_size, "images per step (the global batch under torchrun)",
    above(0));
  f("train.eval_batch_size", t.eval_batch_size, "images per validation or test batch",
    at_least(0, "0 = 2 x batch_size"));
  f("train.epochs", t.epochs, "most epochs to train", above(0));
  f("train.optimizer", t.optimizer, "the update rule: AdamW, or SGD with momentum");
  f("train.lr", t.lr, "peak learning rate, after the warmup", above(0));
  f("train.min_lr", t.min_lr, "floor of the cosine decay, 0..lr");
  f("train.momentum", t.momentum, "SGD's momentum", kRate);
  f("train.betas", t.betas, "AdamW's two betas", kRate);
  f("train.weight_decay", t.weight_decay,
    "decoupled weight decay, on weight matrices only (not biases, norms, class token, position "
    "embedding)",
    at_least(0));
  f("train.warmup_epochs", t.warmup_epochs, "linear warmup, in epochs (fractions allowed)",
    at_least(0));
  f("train.label_smoothing", t.label_smoothing, "label smoothing of the cross-entropy", kRate);
  f("train.grad_clip", t.grad_clip, "largest global gradient norm", at_least(0, "0 = off"));
  f("train.early_stop_patience", t.early_stop_patience,
    "validations without improvement before stopping", at_least(0, "0 = never stop early"));
  f("train.early_stop_min_delta", t.early_stop_min_delta,
    "improvement of the validation accuracy (a fraction) that counts", at_least(0));
  f("train.validate_every", t.validate_every, "steps between validations",
    at_least(0, "0 = once per epoch"));
  f("train.precision", t.precision,
    "autocast precision; auto picks bf16 where the CPU or GPU computes it, fp16 on GPUs "
    "before compute capability 8.0, fp32 elsewhere; fp16 needs CUDA");
  f("train.log_every_s", t.log_every_s,
    "seconds between plain progress lines when the output is not a terminal", above(0));
  f("train.tensorboard", t.tensorboard,
    "write TensorBoard events (events.out.tfevents.*) into the run folder: every metrics.jsonl "
    "field, and the training loss, lr and images/s every train.log_every_s");
  f("train.snapshot_every", t.snapshot_every,
    "epochs between snapshots (snapshots/epoch-NNN.pt in the run folder, for the analyses "
    "across training)",
    at_least(0, "0 = off"));
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
    "layer-wise learning-rate decay, lr x decay^(depth + 1 - layer)",
    Range{0, 1, true, false, false, "1 = off"});
  f("train.head_lr_scale", t.head_lr_scale, "the head's learning rate is lr x this", above(0));
  f("train.dist_backend", t.dist_backend,
    "the collectives' backend under torchrun; auto: nccl on CUDA, gloo on the CPU");
  f("train.dist_timeout_s", t.dist_timeout_s,
    "a collective that waits longer fails (a rank died), in seconds", above(0));
  f("train.dist_bucket_mb", t.dist_bucket_mb, "gradient all-reduce bucket in MiB", above(0));
  f("train.accum_steps", t.accum_steps,
    "micro-batches per optimizer step (gradient accumulation): each is batch_size / accum_steps "
    "images, their gradients add up to the whole batch's, and the schedule, warmup, clipping "
    "and the logged steps count optimizer steps; divides batch_size (and, under torchrun, "
    "batch_size / world size)",
    above(0));
  f("train.grad_checkpointing", t.grad_checkpointing,
    "activation checkpointing: a checkpointed block keeps only its input in the forward pass "
    "and recomputes the rest, with the same dropout and drop-path draws, in the backward pass; "
    "true = every block, k = every k-th block (0, k, 2k, ...), 1..depth; false = off");
  f("train.ema", t.ema,
    "an exponential moving average of the weights (timm's ModelEmaV3), updated after every "
    "optimizer step in fp32 and evaluated beside the weights at each validation: decay in "
    "(0, 1); warmup: timm's, min(decay, 1 - t^(-2/3)) after optimizer step t (from 1); "
    "select_best: best.pt "
    "keeps the better of the two; null = off");

  auto& a = c.analysis;
  f("analysis.head_fusion", a.head_fusion, "rollout: how a layer's heads combine");
  f("analysis.discard_ratio", a.discard_ratio,
    "rollout: fraction of the weakest patch links dropped per layer", kRate);
  f("analysis.rollout_samples", a.rollout_samples,
    "rollout: validation images drawn when no --images are given", above(0));
  f("analysis.distance_samples", a.distance_samples, "attention distance: images averaged",
    above(0));
  f("analysis.renormalize", a.renormalize,
    "attention distance: renormalise each row after dropping the class token");
}

// suggestions.cpp: every field's dotted path, in the table's order.
std::vector<std::string> known_paths();
// Every dotted prefix of a field path: "model", "data", "data.augment", ...
std::set<std::string> section_paths();
// The first key of a section, in the table's order, to show as an example.
std::string first_key_of(const std::string& section);
// The closest valid key among the siblings of `path` (the keys and sections
// that share its parent), so "model.depht" finds "model.depth" and "modle"
// finds "model".
std::string closest_path(const std::string& path);

// config.cpp: train.freeze's forms; nullopt: none of them.
std::optional<FreezePlan> parsed_freeze(const std::string& freeze);

}  // namespace vit::config_detail
