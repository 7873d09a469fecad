#include "vit/config.hpp"

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "vit/error.hpp"
#include "vit_test_paths.hpp"

namespace vit {
namespace {

using nlohmann::json;

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

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
  EXPECT_EQ(c.train.precision, "fp32");
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
  EXPECT_EQ(back.model.pool, "mean");
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
  EXPECT_EQ(error_of([] { from(R"({"model": 3})"); }),
            "test.json: config section 'model': got number, expected a JSON object");
  EXPECT_EQ(error_of([] { from(R"({"seed": -1})"); }),
            "test.json: config key 'seed': got number -1, expected a non-negative integer");
  EXPECT_NE(error_of([] { from("{not json"); }).find("test.json: not valid JSON"),
            std::string::npos);
}

TEST(Config, EachValidationRuleRejectsItsValue) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"model.patch_size=5", "model.patch_size 5 does not divide model.image_size 32"},
      {"model.patch_size=0", "model.patch_size is 0, expected > 0"},
      {"model.heads=3", "model.heads 3 does not divide model.dim 256"},
      {"model.channels=2", "model.channels is 2, expected 1 (gray) or 3 (RGB)"},
      {"model.pool=max", "model.pool is 'max', expected cls | mean"},
      {"model.dropout=1.0", "model.dropout is 1.000000, expected a value in [0, 1)"},
      {"train.lr=0", "train.lr is 0.000000, expected > 0"},
      {"train.lr=-0.1", "train.lr is -0.100000, expected > 0"},
      {"train.batch_size=0", "train.batch_size is 0, expected > 0"},
      {"train.precision=fp8", "train.precision is 'fp8', expected fp32 | bf16 | fp16"},
      {"train.optimizer=adam", "train.optimizer is 'adam', expected adamw | sgd"},
      {"data.dataset=imagenet", "data.dataset is 'imagenet'"},
      {"data.mean=[0.5]", "data.mean has 1 values, expected one per channel (model.channels = 3)"},
      {"data.std=[0.5, 0, 0.5]", "data.std holds 0.000000, expected every value > 0"},
      {"analysis.head_fusion=median",
       "analysis.head_fusion is 'median', expected mean | max | min"},
  };
  for (const auto& [assignment, message] : cases) {
    Config c;
    apply_override(c, assignment);
    const std::string error = error_of([&] { c.validate(); });
    EXPECT_NE(error.find("invalid config: " + message), std::string::npos)
        << assignment << " gave: " << error;
  }
}

TEST(Config, DimHeadLetsTheAttentionWidthDifferFromDim) {
  Config c;
  apply_override(c, "model.dim=128");
  apply_override(c, "model.heads=3");
  apply_override(c, "model.dim_head=64");
  EXPECT_NO_THROW(c.validate());
  EXPECT_EQ(c.model.inner_dim(), 192);
}

TEST(Config, OverridesParseByFieldType) {
  Config c;
  apply_override(c, "model.depth=8");
  apply_override(c, "train.lr=5e-4");
  apply_override(c, "model.qkv_bias=false");
  apply_override(c, "name=my run");
  apply_override(c, "data.mean=[0.5,0.5,0.5]");
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
