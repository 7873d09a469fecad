#include "vit/config.hpp"

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "error_of.hpp"
#include "vit/error.hpp"
#include "vit_test_paths.hpp"

namespace vit {
namespace {

using nlohmann::json;

using testing::error_of;

Config from(const std::string& text) {
  return parse_config_string(text, "test.json");
}

TEST(Config, DefaultsMatchTheDesignDocument) {
  const Config c;
  EXPECT_EQ(c.model.image_size, 32);
  EXPECT_EQ(c.model.dim, 256);
  EXPECT_EQ(c.model.heads, 8);
  EXPECT_EQ(c.model.head_dim(), 32);
  EXPECT_EQ(c.train.batch_size, 128);
  EXPECT_DOUBLE_EQ(c.train.lr, 1e-3);
  EXPECT_EQ(c.train.precision, Precision::kAuto);
  EXPECT_TRUE(c.train.cuda_graph);
  EXPECT_TRUE(c.train.bf16_activations);
  EXPECT_NO_THROW(c.validate());
}

TEST(Config, RoundTripsThroughJson) {
  Config c = from(R"({"name": "x", "model": {"depth": 3, "dim_head": 64, "pool": "mean"},
                      "train": {"lr": 0.002, "betas": [0.8, 0.95]}, "seed": 42})");
  const std::string text = config_to_json_string(c);
  const Config back = from(text);
  EXPECT_EQ(config_to_json_string(back), text);
  EXPECT_EQ(back.model.depth, 3);
  EXPECT_EQ(back.model.inner_dim(), 8 * 64);
  EXPECT_EQ(back.model.pool, Pool::kMean);
  EXPECT_DOUBLE_EQ(back.train.betas[1], 0.95);
  EXPECT_EQ(back.seed, 42u);
}

TEST(Config, UnknownKeySuggestsTheClosest) {
  EXPECT_EQ(error_of([] { from(R"({"model": {"depht": 3}})"); }),
            "test.json: unknown config key 'model.depht'; did you mean 'model.depth'?");
  EXPECT_EQ(
      error_of([] { from(R"({"train": {"weight_decy": 3}})"); }),
      "test.json: unknown config key 'train.weight_decy'; did you mean 'train.weight_decay'?");
  EXPECT_EQ(
      error_of([] { from(R"({"data": {"augment": {"flip": true}}})"); }),
      "test.json: unknown config key 'data.augment.flip'; did you mean 'data.augment.hflip'?");
  EXPECT_EQ(error_of([] { from(R"({"modle": {}})"); }),
            "test.json: unknown config key 'modle'; did you mean 'model'?");
}

TEST(Config, WrongTypesAreErrors) {
  EXPECT_EQ(error_of([] { from(R"({"model": {"depth": "six"}})"); }),
            "test.json: config key 'model.depth': got string \"six\", expected an integer");
  EXPECT_EQ(error_of([] { from(R"({"model": {"depth": 6.5}})"); }),
            "test.json: config key 'model.depth': got number 6.5, expected an integer");
  EXPECT_EQ(error_of([] { from(R"({"model": {"qkv_bias": 1}})"); }),
            "test.json: config key 'model.qkv_bias': got number 1, expected true or false");
  EXPECT_EQ(error_of([] { from(R"({"train": {"cuda_graph": "off"}})"); }),
            "test.json: config key 'train.cuda_graph': got string \"off\", expected true or false");
  EXPECT_EQ(error_of([] { from(R"({"model": 3})"); }),
            "test.json: config section 'model': got number, expected a JSON object");
  EXPECT_EQ(error_of([] { from(R"({"seed": -1})"); }),
            "test.json: config key 'seed': got number -1, expected a non-negative integer");
  EXPECT_NE(error_of([] { from("{not json"); }).find("test.json: not valid JSON"),
            std::string::npos);
  // A number past double's range is nlohmann's out_of_range, not a parse_error
  // (it escaped as an unexplained exception; found by fuzz_config).
  EXPECT_NE(error_of([] { from(R"({"seed": 1e908})"); }).find("test.json: not valid JSON"),
            std::string::npos);
}

// One case per rule of validate() (two where a range has two ends), each with
// its whole message: the field table's ranges, and the rules between fields.
TEST(Config, EachValidationRuleRejectsItsValue) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"name=", "name is empty, expected a run name such as \"cifar10\""},
      {"threads=-1", "threads is -1, expected 0..1024 (0 = all cores)"},
      {"threads=1025", "threads is 1025, expected 0..1024 (0 = all cores)"},
      {"device=gpu", "device is 'gpu', expected auto | cpu | cuda | cuda:N"},
      {"device=", "device is '', expected auto | cpu | cuda | cuda:N"},
      {"device=cuda:x", "device is 'cuda:x', expected auto | cpu | cuda | cuda:N"},
      {"device=cuda:", "device is 'cuda:', expected auto | cpu | cuda | cuda:N"},
      {"device=cuda:12345", "device is 'cuda:12345', expected auto | cpu | cuda | cuda:N"},
      {"device=CPU", "device is 'CPU', expected auto | cpu | cuda | cuda:N"},

      {"model.image_size=0", "model.image_size is 0, expected 1..16384"},
      {"model.image_size=3000000000", "model.image_size is 3000000000, expected 1..16384"},
      {"model.patch_size=0", "model.patch_size is 0, expected > 0"},
      {"model.patch_size=5", "model.patch_size 5 does not divide model.image_size 32"},
      {"model.image_size=16384",
       "model.image_size 16384 / model.patch_size 4 gives 16777216 patches, expected at most "
       "65536"},
      {"model.channels=2", "model.channels is 2, expected 1 (gray) or 3 (RGB)"},
      {"model.num_classes=1",
       "model.num_classes is 1, expected 2..1000000, or 0 for a backbone without a head"},
      {"model.num_classes=1000001",
       "model.num_classes is 1000001, expected 2..1000000, or 0 for a backbone without a head"},
      {"model.dim=0", "model.dim is 0, expected 1..65536"},
      {"model.dim=65537", "model.dim is 65537, expected 1..65536"},
      {"model.depth=0", "model.depth is 0, expected 1..1024"},
      {"model.depth=1025", "model.depth is 1025, expected 1..1024"},
      {"model.heads=0", "model.heads is 0, expected 1..65536"},
      {"model.heads=65537", "model.heads is 65537, expected 1..65536"},
      {"model.dim_head=-1", "model.dim_head is -1, expected 0..65536 (0 = dim / heads)"},
      {"model.dim_head=65537", "model.dim_head is 65537, expected 0..65536 (0 = dim / heads)"},
      {"model.heads=3",
       "model.heads 3 does not divide model.dim 256 (set model.dim_head to use another head "
       "width)"},
      {"model.dim_head=65536", "model.heads * model.dim_head is 524288, expected at most 65536"},
      {"model.mlp_dim=0", "model.mlp_dim is 0, expected 1..65536"},
      {"model.mlp_dim=65537", "model.mlp_dim is 65537, expected 1..65536"},
      {"model.dropout=1.0", "model.dropout is 1, expected a value in [0, 1)"},
      {"model.emb_dropout=-0.1", "model.emb_dropout is -0.1, expected a value in [0, 1)"},
      {"model.attn_dropout=1", "model.attn_dropout is 1, expected a value in [0, 1)"},
      {"model.layer_norm_eps=0", "model.layer_norm_eps is 0, expected > 0"},

      {"data.root=", "data.root is empty, expected the folder holding the dataset"},
      {"data.val_size=-1", "data.val_size is -1, expected >= 0"},
      {"data.mean=[0.5]", "data.mean has 1 values, expected one per channel (model.channels = 3)"},
      {"data.std=[0.5, 0.5]",
       "data.std has 2 values, expected one per channel (model.channels = 3)"},
      {"data.std=[0.5, 0, 0.5]", "data.std holds 0, expected every value > 0"},
      {"data.augment.crop_padding=-1",
       "data.augment.crop_padding is -1, expected 0..31 (below model.image_size)"},
      {"data.augment.crop_padding=32",
       "data.augment.crop_padding is 32, expected 0..31 (below model.image_size)"},
      {"data.augment.randaugment_ops=-1",
       "data.augment.randaugment_ops is -1, expected >= 0 (0 = off)"},
      {"data.augment.randaugment_magnitude=31",
       "data.augment.randaugment_magnitude is 31, expected a value in [0, 30]"},
      {"data.augment.randaugment_magnitude=-1",
       "data.augment.randaugment_magnitude is -1, expected a value in [0, 30]"},
      {"data.augment.mixup_alpha=-1", "data.augment.mixup_alpha is -1, expected >= 0 (0 = off)"},
      {"data.augment.cutmix_alpha=-0.5",
       "data.augment.cutmix_alpha is -0.5, expected >= 0 (0 = off)"},
      {"data.augment.mix_prob=1.5", "data.augment.mix_prob is 1.5, expected a value in [0, 1]"},
      {"data.limit_train=-1", "data.limit_train is -1, expected >= 0 (0 = all)"},
      {"data.limit_test=-1", "data.limit_test is -1, expected >= 0 (0 = all)"},

      {"train.batch_size=0", "train.batch_size is 0, expected > 0"},
      {"train.eval_batch_size=-1",
       "train.eval_batch_size is -1, expected >= 0 (0 = 2 x batch_size)"},
      {"train.epochs=0", "train.epochs is 0, expected > 0"},
      {"train.lr=0", "train.lr is 0, expected > 0"},
      {"train.lr=-0.1", "train.lr is -0.1, expected > 0"},
      {"train.min_lr=0.01", "train.min_lr is 0.01, expected 0 <= min_lr <= lr"},
      {"train.min_lr=-1", "train.min_lr is -1, expected 0 <= min_lr <= lr"},
      {"train.momentum=1", "train.momentum is 1, expected a value in [0, 1)"},
      {"train.betas=[0.9]", "train.betas has 1 values, expected 2 (AdamW's beta1 and beta2)"},
      {"train.betas=[0.9, 1.0]", "train.betas holds 1, expected every value in [0, 1)"},
      {"train.weight_decay=-0.01", "train.weight_decay is -0.01, expected >= 0"},
      {"train.warmup_epochs=-1", "train.warmup_epochs is -1, expected >= 0"},
      {"train.label_smoothing=1", "train.label_smoothing is 1, expected a value in [0, 1)"},
      {"train.grad_clip=-1", "train.grad_clip is -1, expected >= 0 (0 = off)"},
      {"train.early_stop_patience=-1",
       "train.early_stop_patience is -1, expected >= 0 (0 = never stop early)"},
      {"train.early_stop_min_delta=-0.1", "train.early_stop_min_delta is -0.1, expected >= 0"},
      {"train.validate_every=-1", "train.validate_every is -1, expected >= 0 (0 = once per epoch)"},
      {"train.log_every_s=0", "train.log_every_s is 0, expected > 0"},
      {"train.layer_decay=0", "train.layer_decay is 0, expected a value in (0, 1] (1 = off)"},
      {"train.layer_decay=1.5", "train.layer_decay is 1.5, expected a value in (0, 1] (1 = off)"},
      {"train.head_lr_scale=0", "train.head_lr_scale is 0, expected > 0"},
      {"train.freeze=7",
       "train.freeze is '7', expected none | backbone | N (freeze the "
       "embeddings and the first N blocks, 0..6)"},
      {"train.freeze=-1",
       "train.freeze is '-1', expected none | backbone | N (freeze the "
       "embeddings and the first N blocks, 0..6)"},
      {"train.freeze=all",
       "train.freeze is 'all', expected none | backbone | N (freeze the "
       "embeddings and the first N blocks, 0..6)"},
      {"train.freeze=",
       "train.freeze is '', expected none | backbone | N (freeze the "
       "embeddings and the first N blocks, 0..6)"},
      {"train.freeze=99999999999",
       "train.freeze is '99999999999', expected none | backbone | N "
       "(freeze the embeddings and the first N blocks, 0..6)"},

      {"model.registers=257", "model.registers is 257, expected 0..256"},
      {"model.init_values=-1e-05",
       "model.init_values is -1e-05, expected >= 0 (0 = no LayerScale)"},
      {"data.workers=1025", "data.workers is 1025, expected 0..1024 (0 = one per core)"},
      {"data.memory_budget_mb=-1",
       "data.memory_budget_mb is -1, expected >= 0 (0 = a quarter of the machine's memory)"},
      {"data.shuffle_buffer=0", "data.shuffle_buffer is 0, expected 1..1000000"},
      {"data.shuffle_buffer_mb=1048577", "data.shuffle_buffer_mb is 1048577, expected 1..1048576"},
      {"data.augment.random_erasing=1.25",
       "data.augment.random_erasing is 1.25, expected a value in [0, 1]"},
      {"train.snapshot_every=-1", "train.snapshot_every is -1, expected >= 0 (0 = off)"},
      {"train.dist_timeout_s=0", "train.dist_timeout_s is 0, expected > 0"},
      {"train.dist_bucket_mb=-0.5", "train.dist_bucket_mb is -0.5, expected > 0"},
      {"analysis.discard_ratio=1", "analysis.discard_ratio is 1, expected a value in [0, 1)"},
      {"analysis.rollout_samples=0", "analysis.rollout_samples is 0, expected > 0"},
      {"analysis.distance_samples=0", "analysis.distance_samples is 0, expected > 0"},
  };
  for (const auto& [assignment, message] : cases) {
    Config c;
    apply_override(c, assignment);
    EXPECT_EQ(error_of([&] { c.validate(); }), "invalid config: " + message) << assignment;
  }
}

// Settings with a fixed set of names are parsed as they are read, with the
// message validate() gives the other choices.
TEST(Config, UnknownNamesOfTypedSettingsAreRefusedAsTheyAreRead) {
  Config c;
  EXPECT_EQ(error_of([&] { apply_override(c, "model.pool=max"); }),
            "invalid config: model.pool is 'max', expected cls | mean | map | token | avg");
  EXPECT_EQ(error_of([&] { apply_override(c, "train.precision=fp8"); }),
            "invalid config: train.precision is 'fp8', expected auto | fp32 | bf16 | fp16");
  EXPECT_EQ(error_of([&] { apply_override(c, "data.dataset=imagenet"); }),
            "invalid config: data.dataset is 'imagenet', expected cifar10 | cifar100 | mnist | "
            "fashion-mnist | tiny-imagenet | image-folder | synthetic | webdataset");
  EXPECT_EQ(error_of([&] { apply_override(c, "data.augment.padding_mode=edge"); }),
            "invalid config: data.augment.padding_mode is 'edge', expected zeros | reflect");
  EXPECT_EQ(error_of([&] { apply_override(c, "train.optimizer=adam"); }),
            "invalid config: train.optimizer is 'adam', expected adamw | sgd");
  EXPECT_EQ(error_of([&] { apply_override(c, "train.dist_backend=mpi"); }),
            "invalid config: train.dist_backend is 'mpi', expected auto | gloo | nccl");
  EXPECT_EQ(error_of([&] { apply_override(c, "analysis.head_fusion=median"); }),
            "invalid config: analysis.head_fusion is 'median', expected mean | max | min");
  EXPECT_EQ(
      error_of([] { from(R"({"model": {"pool": "CLS"}})"); }),
      "test.json: invalid config: model.pool is 'CLS', expected cls | mean | map | token | avg");
  EXPECT_EQ(error_of([] { from(R"({"train": {"precision": 16}})"); }),
            "test.json: config key 'train.precision': got number 16, expected a string");
  apply_override(c, "train.precision=bf16");
  apply_override(c, "model.pool=mean");
  apply_override(c, "data.dataset=tiny-imagenet");
  apply_override(c, "data.augment.padding_mode=reflect");
  apply_override(c, "train.optimizer=sgd");
  apply_override(c, "train.dist_backend=nccl");
  apply_override(c, "analysis.head_fusion=min");
  EXPECT_EQ(c.data.augment.padding_mode, PaddingMode::kReflect);
  EXPECT_EQ(c.train.optimizer, OptimizerRule::kSgd);
  EXPECT_EQ(c.train.dist_backend, DistBackend::kNccl);
  EXPECT_EQ(c.analysis.head_fusion, HeadFusion::kMin);
  EXPECT_EQ(c.train.precision, Precision::kBf16);
  EXPECT_EQ(c.model.pool, Pool::kMean);
  EXPECT_EQ(c.data.dataset, DatasetKind::kTinyImagenet);
  EXPECT_EQ(config_to_json(c)["data"]["dataset"], "tiny-imagenet");
  EXPECT_EQ(config_to_json(c)["train"]["precision"], "bf16");
  EXPECT_EQ(config_to_json(c)["model"]["pool"], "mean");
}

TEST(Config, FineTuningKnobsAcceptTheirValues) {
  for (const std::string assignment :
       {"train.freeze=none", "train.freeze=backbone", "train.freeze=0", "train.freeze=6",
        "train.layer_decay=1", "train.layer_decay=0.65", "train.head_lr_scale=10"}) {
    Config c;
    apply_override(c, assignment);
    EXPECT_NO_THROW(c.validate()) << assignment;
  }
  const Config c = from(R"({"train": {"init": "w.safetensors", "init_strict": true}})");
  EXPECT_EQ(c.train.init, "w.safetensors");
  EXPECT_TRUE(c.train.init_strict);
  const Config defaults;
  EXPECT_EQ(config_to_json(defaults)["train"]["freeze"], "none");
}

TEST(Config, EveryDeviceSyntaxIsAccepted) {
  for (const std::string device : {"auto", "cpu", "cuda", "cuda:0", "cuda:7", "cuda:1234"}) {
    Config c;
    apply_override(c, "device=" + device);
    EXPECT_NO_THROW(c.validate()) << device;
  }
}

TEST(Config, TheLargestAllowedModelValidates) {
  Config c;
  for (const char* assignment :
       {"model.image_size=16384", "model.patch_size=64", "model.num_classes=1000000",
        "model.dim=65536", "model.depth=1024", "model.heads=65536", "model.dim_head=1",
        "model.mlp_dim=65536", "data.augment.crop_padding=16383", "threads=1024"})
    apply_override(c, assignment);
  EXPECT_NO_THROW(c.validate());
}

TEST(Config, ASectionIsNotAKey) {
  Config c;
  EXPECT_EQ(error_of([&] { apply_override(c, R"(model={"depth": 3})"); }),
            "--set: 'model' is a section; set one of its keys, e.g. model.image_size");
  EXPECT_EQ(error_of([&] { apply_override(c, "data.augment=1"); }),
            "--set: 'data.augment' is a section; set one of its keys, e.g. "
            "data.augment.crop_padding");
  EXPECT_EQ(error_of([&] { apply_override(c, "analysis=x"); }),
            "--set: 'analysis' is a section; set one of its keys, e.g. analysis.head_fusion");
}

TEST(Config, DimHeadLetsTheAttentionWidthDifferFromDim) {
  Config c;
  apply_override(c, "model.dim=128");
  apply_override(c, "model.heads=3");
  apply_override(c, "model.dim_head=64");
  EXPECT_NO_THROW(c.validate());
  EXPECT_EQ(c.model.inner_dim(), 192);
}

TEST(Config, StreamingSettingsReadAndWriteBack) {
  const Config c = from(R"({"model": {"image_size": 224, "patch_size": 16, "drop_path": 0.1},
      "data": {"dataset": "image-folder", "stream": true, "workers": 3, "crop_pct": 0.9,
               "augment": {"random_resized_crop": {"scale": [0.2, 1.0]}, "random_erasing": 0.25}}})");
  ASSERT_TRUE(c.data.augment.random_resized_crop);
  EXPECT_EQ(c.data.augment.random_resized_crop->scale, (std::vector<double>{0.2, 1.0}));
  EXPECT_EQ(c.data.augment.random_resized_crop->ratio, (std::vector<double>{0.75, 4.0 / 3}));
  EXPECT_EQ(c.data.stream, StreamMode::kOn);
  EXPECT_EQ(c.data.workers, 3);
  EXPECT_DOUBLE_EQ(c.model.drop_path, 0.1);
  const json j = config_to_json(c);
  EXPECT_EQ(j["data"]["stream"], true);
  EXPECT_EQ(j["data"]["augment"]["random_resized_crop"]["scale"], json({0.2, 1.0}));
  EXPECT_EQ(config_to_json_string(from(config_to_json_string(c))), config_to_json_string(c));
  const Config defaults;
  EXPECT_FALSE(defaults.data.augment.random_resized_crop);
  EXPECT_EQ(config_to_json(defaults)["data"]["stream"], "auto");
  EXPECT_TRUE(config_to_json(defaults)["data"]["augment"]["random_resized_crop"].is_null());
  Config o;
  apply_override(o, "data.stream=false");
  EXPECT_EQ(o.data.stream, StreamMode::kOff);
  apply_override(o, "data.stream=auto");
  EXPECT_EQ(o.data.stream, StreamMode::kAuto);
  apply_override(o, "data.augment.random_resized_crop={}");
  EXPECT_TRUE(o.data.augment.random_resized_crop);
  apply_override(o, "data.augment.random_resized_crop=null");
  EXPECT_FALSE(o.data.augment.random_resized_crop);
  EXPECT_EQ(error_of([] { from(R"({"data": {"stream": "yes"}})"); }),
            "test.json: config key 'data.stream': got string \"yes\", expected \"auto\", true or "
            "false");
  EXPECT_EQ(
      error_of([] { from(R"({"data": {"augment": {"random_resized_crop": {"area": 1}}}})"); }),
      "test.json: unknown config key 'data.augment.random_resized_crop.area'; expected "
      "scale or ratio");
  EXPECT_EQ(error_of([] { from(R"({"data": {"augment": {"random_resized_crop": [0.08, 1]}}})"); }),
            "test.json: config key 'data.augment.random_resized_crop': got array [0.08,1], "
            "expected null or an object such as {\"scale\": [0.08, 1.0], \"ratio\": [0.75, "
            "1.3333]}");
}

TEST(Config, StreamingValuesAreChecked) {
  const auto invalid = [](const std::string& text) {
    return error_of([&] { from(text).validate(); });
  };
  EXPECT_EQ(invalid(R"({"data": {"augment": {"random_resized_crop": {"scale": [0.5, 0.1]}}}})"),
            "invalid config: data.augment.random_resized_crop.scale is [0.5, 0.1], expected "
            "[low, high] with 0 < low <= high <= 1");
  EXPECT_EQ(invalid(R"({"data": {"augment": {"random_resized_crop": {"ratio": [0, 2]}}}})"),
            "invalid config: data.augment.random_resized_crop.ratio is [0, 2], expected "
            "[low, high] with 0 < low <= high");
  EXPECT_EQ(invalid(R"({"data": {"crop_pct": 1.5}})"),
            "invalid config: data.crop_pct is 1.5, expected a value in (0, 1]");
  EXPECT_EQ(invalid(R"({"data": {"prefetch_batches": -1}})"),
            "invalid config: data.prefetch_batches is -1, expected 0..1024 (0 = 2 on the CPU, 4 on "
            "CUDA)");
  EXPECT_EQ(invalid(R"({"data": {"dataset": "webdataset", "train_shards": "t-{0..3}.tar"}})"),
            "invalid config: data.val_shards is empty, expected the validation "
            "shards' brace pattern under data.root (webdataset)");
  EXPECT_EQ(invalid(R"({"data": {"stream": false, "augment": {"random_resized_crop": {}}}})"),
            "invalid config: data.augment.random_resized_crop crops the original "
            "images, which only the streamed path reads; data.stream is false");
  EXPECT_EQ(invalid(R"({"model": {"drop_path": 1.0}})"),
            "invalid config: model.drop_path is 1, expected a value in [0, 1)");
}

// train.accum_steps, train.grad_checkpointing and train.ema: read, written
// back, and refused with one line at config time, before any data is read.
TEST(Config, FittingSettingsReadWriteBackAndAreChecked) {
  const Config c = from(R"({"train": {"batch_size": 256, "accum_steps": 4,
      "grad_checkpointing": 2, "ema": {"decay": 0.99996, "warmup": true}}})");
  EXPECT_EQ(c.train.micro_batch_size(), 64);
  EXPECT_EQ(c.train.grad_checkpointing.every, 2);
  ASSERT_TRUE(c.train.ema);
  EXPECT_DOUBLE_EQ(c.train.ema->decay, 0.99996);
  EXPECT_TRUE(c.train.ema->warmup);
  EXPECT_TRUE(c.train.ema->select_best);
  const json j = config_to_json(c);
  EXPECT_EQ(j["train"]["grad_checkpointing"], 2);
  EXPECT_EQ(j["train"]["ema"], json({{"decay", 0.99996}, {"warmup", true}, {"select_best", true}}));
  EXPECT_EQ(config_to_json_string(from(config_to_json_string(c))), config_to_json_string(c));
  const Config defaults;
  EXPECT_EQ(config_to_json(defaults)["train"]["grad_checkpointing"], false);
  EXPECT_TRUE(config_to_json(defaults)["train"]["ema"].is_null());
  Config o;
  apply_override(o, "train.grad_checkpointing=true");
  EXPECT_EQ(o.train.grad_checkpointing.every, 1);
  EXPECT_EQ(config_to_json(o)["train"]["grad_checkpointing"], true);
  apply_override(o, R"(train.ema={"decay": 0.999})");
  ASSERT_TRUE(o.train.ema);
  EXPECT_DOUBLE_EQ(o.train.ema->decay, 0.999);
  EXPECT_FALSE(o.train.ema->warmup);

  const auto invalid = [](const std::string& text) {
    return error_of([&] { from(text).validate(); });
  };
  EXPECT_EQ(invalid(R"({"train": {"batch_size": 100, "accum_steps": 3}})"),
            "invalid config: train.accum_steps is 3, expected a divisor of train.batch_size 100 "
            "(each micro-batch is batch_size / accum_steps images)");
  EXPECT_EQ(invalid(R"({"train": {"accum_steps": 0}})"),
            "invalid config: train.accum_steps is 0, expected > 0");
  EXPECT_EQ(invalid(R"({"train": {"accum_steps": -2}})"),
            "invalid config: train.accum_steps is -2, expected > 0");
  EXPECT_EQ(invalid(R"({"train": {"grad_checkpointing": 7}})"),
            "invalid config: train.grad_checkpointing is 7, expected 0..6 (true = every block, "
            "k = every k-th block of model.depth)");
  EXPECT_EQ(invalid(R"({"train": {"ema": {"decay": 1.0}}})"),
            "invalid config: train.ema.decay is 1, expected a value in (0, 1)");
  EXPECT_EQ(invalid(R"({"train": {"ema": {"decay": 0}}})"),
            "invalid config: train.ema.decay is 0, expected a value in (0, 1)");
  EXPECT_EQ(error_of([] { from(R"({"train": {"ema": {"beta": 0.9}}})"); }),
            "test.json: unknown config key 'train.ema.beta'; expected decay, warmup or "
            "select_best");
  EXPECT_EQ(error_of([] { from(R"({"train": {"grad_checkpointing": "all"}})"); }),
            "test.json: config key 'train.grad_checkpointing': got string \"all\", expected true, "
            "false or an interval of blocks");
}

TEST(Config, OverridesParseByFieldType) {
  Config c;
  apply_override(c, "model.depth=8");
  apply_override(c, "train.lr=5e-4");
  apply_override(c, "model.qkv_bias=false");
  apply_override(c, "name=my run");
  apply_override(c, "data.mean=[0.5,0.5,0.5]");
  apply_override(c, "train.cuda_graph=false");
  EXPECT_FALSE(c.train.cuda_graph);
  EXPECT_EQ(c.model.depth, 8);
  EXPECT_DOUBLE_EQ(c.train.lr, 5e-4);
  EXPECT_FALSE(c.model.qkv_bias);
  EXPECT_EQ(c.name, "my run");
  EXPECT_DOUBLE_EQ(c.data.mean[2], 0.5);
  EXPECT_EQ(error_of([&] { apply_override(c, "model.depth"); }),
            "--set 'model.depth': expected KEY=VALUE, e.g. --set model.depth=8");
  EXPECT_EQ(error_of([&] { apply_override(c, "model.dpth=3"); }),
            "--set: unknown config key 'model.dpth'; did you mean 'model.depth'?");
  EXPECT_EQ(error_of([&] { apply_override(c, "model.depth=abc"); }),
            "--set model.depth: 'abc' is not a valid value (use JSON: 8, 0.5, true, [0.5, 0.5])");
}

TEST(Config, DatasetPicksItsNormalisationUnlessGiven) {
  const Config c = from(R"({"model": {"channels": 1}, "data": {"dataset": "fashion-mnist"}})");
  ASSERT_EQ(c.data.mean.size(), 1u);
  EXPECT_DOUBLE_EQ(c.data.mean[0], 0.2860);
  EXPECT_DOUBLE_EQ(c.data.std[0], 0.3530);
  const Config given = from(R"({"data": {"dataset": "cifar100", "mean": [0.5, 0.5, 0.5]}})");
  EXPECT_DOUBLE_EQ(given.data.mean[0], 0.5);
  EXPECT_DOUBLE_EQ(given.data.std[0], 0.2673);
}

TEST(Config, FlipIsOffByDefaultOnlyForDigits) {
  EXPECT_TRUE(Config().data.augment.hflip);
  for (const std::string dataset :
       {"cifar10", "cifar100", "fashion-mnist", "tiny-imagenet", "image-folder"}) {
    const Config c = from(R"({"data": {"dataset": ")" + dataset + R"("}})");
    EXPECT_TRUE(c.data.augment.hflip) << dataset;
  }
  EXPECT_FALSE(from(R"({"data": {"dataset": "mnist"}})").data.augment.hflip);
  EXPECT_TRUE(
      from(R"({"data": {"dataset": "mnist", "augment": {"hflip": true}}})").data.augment.hflip);
  EXPECT_FALSE(from(R"({"data": {"augment": {"hflip": false}}})").data.augment.hflip);
}

// A config file on disk, read with --set overrides as the commands read it.
class ConfigFile : public ::testing::Test {
 protected:
  void TearDown() override { std::filesystem::remove(path_); }
  std::string write(const std::string& text) {
    std::ofstream(path_) << text;
    return path_;
  }
  const std::string path_ = (std::filesystem::temp_directory_path() /
                             ("vit_config_test_" + std::to_string(::getpid()) + ".json"))
                                .string();
};

// The file leaves the dataset at CIFAR-10 and --set changes it: mean, std and
// hflip follow the new dataset unless the file or a --set gave them.
TEST_F(ConfigFile, DatasetDefaultsFollowTheDatasetSetOnTheCommandLine) {
  const Config c = load_config(write("{}"), {"data.dataset=mnist", "model.channels=1"});
  EXPECT_EQ(c.data.mean, (std::vector<double>{0.1307}));
  EXPECT_EQ(c.data.std, (std::vector<double>{0.3081}));
  EXPECT_FALSE(c.data.augment.hflip);

  // The order of the --set flags does not matter.
  const Config later = load_config(write("{}"), {"model.channels=1", "data.dataset=fashion-mnist"});
  EXPECT_EQ(later.data.mean, (std::vector<double>{0.2860}));
  EXPECT_EQ(later.data.std, (std::vector<double>{0.3530}));
  EXPECT_TRUE(later.data.augment.hflip);
}

TEST_F(ConfigFile, ExplicitValuesSurviveADatasetOverride) {
  // From the file: mean and hflip stay, std follows the new dataset.
  const std::string file =
      R"({"model": {"channels": 1}, "data": {"mean": [0.5], "augment": {"hflip": true}}})";
  const Config from_file = load_config(write(file), {"data.dataset=mnist"});
  EXPECT_EQ(from_file.data.mean, (std::vector<double>{0.5}));
  EXPECT_EQ(from_file.data.std, (std::vector<double>{0.3081}));
  EXPECT_TRUE(from_file.data.augment.hflip);

  // From --set, before or after the dataset.
  const Config from_set = load_config(
      write("{}"),
      {"data.std=[0.25]", "model.channels=1", "data.dataset=mnist", "data.augment.hflip=true"});
  EXPECT_EQ(from_set.data.mean, (std::vector<double>{0.1307}));
  EXPECT_EQ(from_set.data.std, (std::vector<double>{0.25}));
  EXPECT_TRUE(from_set.data.augment.hflip);
}

TEST_F(ConfigFile, AResolvedConfigReadsBackTheSame) {
  // config.json of a run holds the resolved values, so reading it back (even
  // with another dataset set on top) changes nothing that was resolved.
  const Config c = load_config(write(R"({"model": {"channels": 1}})"), {"data.dataset=mnist"});
  const std::string text = config_to_json_string(c);
  const Config back = from(text);
  EXPECT_EQ(config_to_json_string(back), text);
  EXPECT_EQ(back.data.mean, (std::vector<double>{0.1307}));
  EXPECT_FALSE(back.data.augment.hflip);
  Config moved = from(text);
  apply_override(moved, "data.dataset=fashion-mnist");
  EXPECT_EQ(moved.data.mean, (std::vector<double>{0.1307}));
  EXPECT_FALSE(moved.data.augment.hflip);

  const Config digits = from(R"({"model": {"channels": 1}, "data": {"dataset": "mnist"}})");
  EXPECT_EQ(config_to_json_string(from(config_to_json_string(digits))),
            config_to_json_string(digits));
}

TEST(Config, EveryShippedConfigLoadsAndValidates) {
  int count = 0;
  for (const auto& entry :
       std::filesystem::directory_iterator(std::string(VIT_SOURCE_DIR) + "/configs")) {
    if (entry.path().extension() != ".json") continue;
    SCOPED_TRACE(entry.path().string());
    const Config c = load_config(entry.path().string());
    EXPECT_EQ(c.name + ".json", entry.path().filename().string());
    ++count;
  }
  EXPECT_GE(count, 5);
}

TEST(Config, LoadConfigNamesTheFile) {
  EXPECT_EQ(error_of([] { load_config("/nonexistent/x.json"); }),
            "/nonexistent/x.json: cannot open config file");
}

}  // namespace
}  // namespace vit
