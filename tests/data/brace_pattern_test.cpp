#include "vit/data/brace_pattern.hpp"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <utility>

#include <gtest/gtest.h>

#include "error_of.hpp"

namespace fs = std::filesystem;

namespace vit::data {
namespace {

using Names = std::vector<std::string>;
using testing::error_of;

TEST(BracePattern, ARangeKeepsItsFirstBoundsWidth) {
  EXPECT_EQ(expand_braces("train-{000000..000002}.tar"),
            (Names{"train-000000.tar", "train-000001.tar", "train-000002.tar"}));
  EXPECT_EQ(expand_braces("{8..11}"), (Names{"8", "9", "10", "11"}));
  EXPECT_EQ(expand_braces("{08..10}"), (Names{"08", "09", "10"}));
  EXPECT_EQ(expand_braces("s{7..7}"), (Names{"s7"}));
  const Names big = expand_braces("{000000..000146}");
  ASSERT_EQ(big.size(), 147u);
  EXPECT_EQ(big.front(), "000000");
  EXPECT_EQ(big[99], "000099");
  EXPECT_EQ(big.back(), "000146");
}

TEST(BracePattern, AListExpandsInItsOrder) {
  EXPECT_EQ(expand_braces("{train,extra}-0.tar"), (Names{"train-0.tar", "extra-0.tar"}));
  EXPECT_EQ(expand_braces("a{,-b}"), (Names{"a", "a-b"}));
  EXPECT_EQ(expand_braces("{only}.tar"), (Names{"only.tar"}));
}

TEST(BracePattern, SeveralBracesGiveTheProductRightmostFastest) {
  EXPECT_EQ(expand_braces("{train,extra}-{0..2}.tar"),
            (Names{"train-0.tar", "train-1.tar", "train-2.tar", "extra-0.tar", "extra-1.tar",
                   "extra-2.tar"}));
  EXPECT_EQ(expand_braces("{a,b}{c,d}{0..1}"),
            (Names{"ac0", "ac1", "ad0", "ad1", "bc0", "bc1", "bd0", "bd1"}));
}

TEST(BracePattern, APatternWithoutBracesIsItself) {
  EXPECT_EQ(expand_braces("shards/train-000000.tar"), (Names{"shards/train-000000.tar"}));
  EXPECT_EQ(expand_braces(""), (Names{""}));
}

TEST(BracePattern, AMillionNamesAreAllowed) {
  const Names names = expand_braces("{0..999}-{000..999}");
  ASSERT_EQ(names.size(), 1000000u);
  EXPECT_EQ(names[1001], "1-001");
  EXPECT_EQ(names.back(), "999-999");
}

TEST(BracePattern, RefusesEveryMalformedPattern) {
  const std::string not_integers = " needs two non-negative integers, e.g. {000000..000146}";
  const std::vector<std::pair<std::string, std::string>> refused = {
      {"train-{0..9.tar", "the '{' at offset 6 has no '}'"},
      {"a-{0..9}}.tar", "the '}' at offset 8 closes no '{'"},
      {"{a,{b,c}}", "the '{' at offset 0 has no '}' before the next '{' (braces do not nest)"},
      {"train-{}.tar", "the braces at offset 6 are empty, expected a list {a,b} or a range {0..9}"},
      {"{a..c}", "the range {a..c}" + not_integers},
      {"{-1..3}", "the range {-1..3}" + not_integers},
      {"{0..}", "the range {0..}" + not_integers},
      {"{0..99999999999999999999}", "the range {0..99999999999999999999}" + not_integers},
      {"{9..3}", "the range {9..3} descends, expected FIRST <= LAST"},
      {"{0..1000000}", "stands for more than 1000000 names"},
      {"{0..999}{0..999}{a,b}", "stands for more than 1000000 names"},
  };
  for (const auto& [pattern, why] : refused)
    EXPECT_EQ(error_of([&] { expand_braces(pattern); }), "pattern '" + pattern + "': " + why);
}

class BracePatternFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("vit_brace_" + std::to_string(::getpid()));
    fs::remove_all(root_);
    fs::create_directories(root_ / "shards");
    for (const char* name : {"shards/train-000000.tar", "shards/train-000001.tar"})
      std::ofstream(root_ / name) << "x";
  }
  void TearDown() override { fs::remove_all(root_); }
  fs::path root_;
};

TEST_F(BracePatternFiles, ARelativePatternIsTakenFromTheRoot) {
  EXPECT_EQ(shard_files("shards/train-{000000..000001}.tar", root_, "data.train_shards"),
            (std::vector<fs::path>{root_ / "shards/train-000000.tar",
                                   root_ / "shards/train-000001.tar"}));
}

TEST_F(BracePatternFiles, AnAbsolutePatternIsTakenAsItIs) {
  const std::string pattern = (root_ / "shards/train-{000000..000001}.tar").string();
  EXPECT_EQ(shard_files(pattern, "/elsewhere", "data.train_shards"),
            (std::vector<fs::path>{root_ / "shards/train-000000.tar",
                                   root_ / "shards/train-000001.tar"}));
}

TEST_F(BracePatternFiles, NamesTheFirstMissingFile) {
  EXPECT_EQ(error_of([&] {
              shard_files("shards/train-{000000..000003}.tar", root_, "data.train_shards");
            }),
            "data.train_shards: 'shards/train-{000000..000003}.tar' names " +
                (root_ / "shards/train-000002.tar").string() +
                ", which is missing or not a file (2 of its 4 files exist)");
}

TEST_F(BracePatternFiles, SaysWhenNothingMatches) {
  EXPECT_EQ(error_of([&] { shard_files("val-{0..4}.tar", root_, "data.val_shards"); }),
            "data.val_shards: 'val-{0..4}.tar' matches nothing under " + root_.string());
  EXPECT_EQ(error_of([&] { shard_files("/nowhere/val-{0..4}.tar", root_, "data.val_shards"); }),
            "data.val_shards: '/nowhere/val-{0..4}.tar' matches nothing");
  EXPECT_EQ(error_of([&] { shard_files("shards", root_, "data.val_shards"); }),  // a folder
            "data.val_shards: 'shards' matches nothing under " + root_.string());
}

TEST_F(BracePatternFiles, AMalformedPatternNamesTheSetting) {
  EXPECT_EQ(error_of([&] { shard_files("train-{3..1}.tar", root_, "data.train_shards"); }),
            "data.train_shards: pattern 'train-{3..1}.tar': the range {3..1} descends, expected "
            "FIRST <= LAST");
}

}  // namespace
}  // namespace vit::data
