// Replays every input under tests/fuzz_regressions/<target>/ (the inputs that
// once crashed a fuzz target, see docs/robustness.md) through the fuzz
// targets' own entry points (fuzz/entry_points.hpp). Each must give a clean
// answer: success or a vit::Error with a message. A crash fails the suite.
#include <filesystem>
#include <fstream>
#include <set>

#include <gtest/gtest.h>

#include "entry_points.hpp"
#include "vit/error.hpp"
#include "vit_test_paths.hpp"

namespace vit {
namespace {

namespace fs = std::filesystem;

const fs::path kCorpus = fs::path(VIT_SOURCE_DIR) / "tests" / "fuzz_regressions";

std::vector<uint8_t> bytes_of(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

TEST(FuzzRegressions, TheTargetListMatchesTheEntryPoints) {
  std::ifstream in(fs::path(VIT_SOURCE_DIR) / "fuzz" / "targets.txt");
  std::vector<std::string> listed;
  for (std::string line; std::getline(in, line);)
    listed.push_back(line);
  std::vector<std::string> names;
  for (const auto& t : fuzz::targets())
    names.push_back(t.name);
  EXPECT_EQ(listed, names);
}

TEST(FuzzRegressions, EveryCheckedInInputGetsACleanAnswer) {
  ASSERT_TRUE(fs::is_directory(kCorpus));
  int inputs = 0;
  for (const auto& target_dir : fs::directory_iterator(kCorpus)) {
    if (!target_dir.is_directory()) continue;
    const std::string target = target_dir.path().filename().string();
    const fuzz::EntryPoint run = fuzz::entry_point(target);  // a folder must name a target
    for (const auto& file : fs::directory_iterator(target_dir.path())) {
      const std::vector<uint8_t> bytes = bytes_of(file.path());
      ++inputs;
      try {
        run(bytes.data(), bytes.size());
      } catch (const Error& e) {
        EXPECT_STRNE(e.what(), "") << file.path();
      } catch (const std::exception& e) {
        ADD_FAILURE() << file.path() << ": not a vit::Error: " << e.what();
      }
    }
  }
  EXPECT_GT(inputs, 0);
  RecordProperty("inputs", inputs);
}

}  // namespace
}  // namespace vit
