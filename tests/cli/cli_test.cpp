#include "cli/cli.hpp"

#include <algorithm>
#include <vector>

#include <gtest/gtest.h>

#include "command_list.hpp"
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

// A command's own subcommands, without CLI11's option groups (which are
// subcommands to it).
std::vector<const CLI::App*> commands_under(const CLI::App& app) {
  std::vector<const CLI::App*> commands;
  for (const auto* child : app.get_subcommands({}))
    if (dynamic_cast<const CLI::Option_group*>(child) == nullptr) commands.push_back(child);
  return commands;
}

// Every command has a description, and every one that runs (a command of two
// words, `vit sae train`, under its parent) takes the common flags.
void expect_help(const CLI::App& command, const std::string& name) {
  EXPECT_FALSE(command.get_description().empty()) << name;
  const auto children = commands_under(command);
  if (children.empty()) {
    EXPECT_NE(command.help().find("--device"), std::string::npos) << name;
    return;
  }
  for (const auto* child : children)
    expect_help(*child, name + " " + child->get_name());
}

TEST(Cli, EveryCommandHasHelp) {
  Cli cli;
  register_all_commands(cli);
  const auto commands = commands_under(cli.app());
  for (const auto* sub : commands)
    expect_help(*sub, sub->get_name());
  EXPECT_EQ(std::count_if(commands.begin(), commands.end(),
                          [](const CLI::App* c) { return !commands_under(*c).empty(); }),
            1)
      << "only vit sae has subcommands";
}

}  // namespace
}  // namespace vit::cli
