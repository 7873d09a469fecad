#include "cli/cli.hpp"

#include <gtest/gtest.h>

#include "cli/commands.hpp"
#include "commands/cmd_info.hpp"
#include "vit_test_paths.hpp"

namespace vit::cli {
namespace {

const std::string kConfig = std::string(VIT_SOURCE_DIR) + "/configs/cifar10.json";

TEST(Cli, GoodFlagsSetTheRightFields) {
  Cli cli;
  auto info = register_info(cli);
  cli.parse({"info", "--config", kConfig, "--json", "--set", "model.depth=2", "--set",
             "train.lr=0.1", "--device", "cpu", "--threads", "2", "--seed", "7"});
  EXPECT_EQ(info->config, kConfig);
  EXPECT_TRUE(info->json);
  EXPECT_EQ(info->overrides, (std::vector<std::string>{"model.depth=2", "train.lr=0.1"}));
  EXPECT_EQ(info->common.device, "cpu");
  EXPECT_EQ(info->common.threads, 2);
  ASSERT_TRUE(info->common.seed.has_value());
  EXPECT_EQ(*info->common.seed, 7u);
}

TEST(Cli, DefaultsWhenFlagsAreLeftOut) {
  Cli cli;
  auto info = register_info(cli);
  cli.parse({"info", "--config", kConfig});
  EXPECT_FALSE(info->json);
  EXPECT_EQ(info->common.device, "auto");
  EXPECT_EQ(info->common.threads, 0);
  EXPECT_FALSE(info->common.seed.has_value());
}

TEST(Cli, BadFlagsFail) {
  const std::vector<std::vector<std::string>> bad = {
      {"info", "--config", kConfig, "--bogus"},
      {"info"},                                      // --config is required
      {"info", "--config", "/does/not/exist.json"},  // must exist
      {"info", "--config", kConfig, "--threads", "-1"},
      {"info", "--config", kConfig, "--threads", "many"},
      {"info", "--config", kConfig, "--threads", "1025"},
      {"info", "--config", kConfig, "--seed", "-3"},
      {"info", "--config", kConfig, "--quiet", "--verbose"},
      {"eval", "--precision", "fp8"},
      {"predict", "--images", kConfig, "--precision", "half"},
      {},  // a subcommand is required
      {"nosuchcommand"},
  };
  for (const auto& args : bad) {
    Cli cli;
    register_all_commands(cli);
    EXPECT_THROW(cli.parse(args), CLI::ParseError) << ::testing::PrintToString(args);
  }
}

// --threads shares the config's bound, kMaxThreads.
TEST(Cli, ThreadsHaveAnUpperBound) {
  Cli cli;
  auto info = register_info(cli);
  cli.parse({"info", "--config", kConfig, "--threads", "1024"});
  EXPECT_EQ(info->common.threads, 1024);
  Cli too_many;
  register_info(too_many);
  try {
    too_many.parse({"info", "--config", kConfig, "--threads", "5000"});
    FAIL() << "no error";
  } catch (const CLI::ValidationError& e) {
    EXPECT_STREQ(e.what(), "--threads: Value 5000 not in range 0 to 1024");
  }
}

TEST(Cli, EveryCommandHasHelp) {
  Cli cli;
  register_all_commands(cli);
  for (const auto* sub : cli.app().get_subcommands({})) {
    EXPECT_FALSE(sub->get_description().empty()) << sub->get_name();
    EXPECT_NE(sub->help().find("--device"), std::string::npos) << sub->get_name();
  }
}

}  // namespace
}  // namespace vit::cli
