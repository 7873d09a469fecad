// vit config: the default config and the key reference, against the field list.
#include "commands/cmd_config.hpp"

#include <fstream>
#include <sstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "vit/config.hpp"
#include "vit_test_paths.hpp"

namespace vit::cli {
namespace {

std::string printed(const std::vector<std::string>& args) {
  Cli cli;
  register_config(cli);
  cli.parse(args);
  ::testing::internal::CaptureStdout();
  const int status = cli.run();
  const std::string out = ::testing::internal::GetCapturedStdout();
  EXPECT_EQ(status, 0);
  return out;
}

TEST(ConfigCommand, DefaultsAreTheCodesDefaultsAndReadBackAsThem) {
  const std::string json = printed({"config", "--defaults"});
  const Config defaults;
  EXPECT_EQ(json, config_to_json_string(defaults));
  const Config back = parse_config_string(json, "defaults");
  EXPECT_EQ(config_to_json_string(back), json);
  const auto j = nlohmann::json::parse(json);
  EXPECT_EQ(j["train"]["precision"], "auto");
  EXPECT_EQ(j["model"]["depth"], 6);
  EXPECT_EQ(j["model"]["pool"], "cls");
}

// docs/config.md is the reference the command prints: regenerate it with
// `./build/vit config --reference > docs/config.md` when a key changes.
TEST(ConfigCommand, DocsConfigMdIsTheReference) {
  std::ifstream in(std::string(VIT_SOURCE_DIR) + "/docs/config.md");
  ASSERT_TRUE(in) << "docs/config.md is missing";
  std::stringstream file;
  file << in.rdbuf();
  EXPECT_EQ(file.str(), printed({"config", "--reference"}))
      << "docs/config.md is stale: ./build/vit config --reference > docs/config.md";
}

TEST(ConfigCommand, TheReferenceHasEveryKeyOnceWithItsDefault) {
  const std::string reference = config_reference_markdown();
  const auto keys = config_keys();
  EXPECT_EQ(keys.size(), 103u);
  for (const auto& key : keys) {
    EXPECT_NE(reference.find("| `" + key.path + "` |"), std::string::npos) << key.path;
    EXPECT_FALSE(key.meaning.empty()) << key.path;
  }
  EXPECT_NE(reference.find("| `model.depth` | integer, 1..1024 | `6` | transformer blocks L |"),
            std::string::npos);
  EXPECT_NE(reference.find("| `train.ema` | null or {decay: number, warmup: true/false, "
                           "select_best: true/false} | `null` |"),
            std::string::npos);
  EXPECT_NE(reference.find("| `train.grad_checkpointing` | true/false or integer | `false` |"),
            std::string::npos);
  EXPECT_NE(reference.find("| `model.pool` | string: cls \\| mean \\| map \\| token \\| avg | "
                           "`\"cls\"` | what the head reads (timm's global_pool): the class token "
                           "(cls, or timm's token)"),
            std::string::npos);
  EXPECT_NE(reference.find("| `threads` | integer, 0..1024 | `0` | LibTorch's CPU threads; 0 = all "
                           "cores |"),
            std::string::npos);
  EXPECT_NE(reference.find("| `train.betas` | list of numbers, each [0, 1) | `[0.9,0.999]` |"),
            std::string::npos);
}

TEST(ConfigCommand, AskingForBothOrNeitherIsAnError) {
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"config"},
        std::vector<std::string>{"config", "--defaults", "--reference"}}) {
    Cli cli;
    register_config(cli);
    EXPECT_THROW(cli.parse(args), CLI::ParseError);
  }
}

}  // namespace
}  // namespace vit::cli
