#include "vit/train/snapshots.hpp"

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

namespace vit {
namespace {

namespace fs = std::filesystem;

TEST(Snapshots, DueAtTheEndOfEveryNthEpoch) {
  // 10 steps per epoch, every 2 epochs.
  EXPECT_FALSE(snapshot_due(10, 10, 2));
  EXPECT_EQ(snapshot_due(20, 10, 2), "snapshots/epoch-002.pt");
  EXPECT_FALSE(snapshot_due(25, 10, 2));
  EXPECT_EQ(snapshot_due(120, 10, 3), "snapshots/epoch-012.pt");
  EXPECT_EQ(snapshot_due(10, 10, 1), "snapshots/epoch-001.pt");
  EXPECT_FALSE(snapshot_due(10, 10, 0)) << "0 is off";
  EXPECT_FALSE(snapshot_due(0, 10, 1));
}

TEST(Snapshots, ListedByEpochIgnoringOtherFiles) {
  const fs::path run = fs::temp_directory_path() / ("vit_snapshots_" + std::to_string(::getpid()));
  fs::remove_all(run);
  EXPECT_TRUE(list_snapshots(run.string()).empty());
  fs::create_directories(run / "snapshots");
  for (const char* name :
       {"epoch-010.pt", "epoch-002.pt", "epoch-1000.pt", "notes.txt", "epoch-003.pt.tmp"})
    std::ofstream(run / "snapshots" / name) << "x";
  const auto found = list_snapshots(run.string());
  ASSERT_EQ(found.size(), 3u);
  EXPECT_EQ(found[0].epoch, 2);
  EXPECT_EQ(found[1].epoch, 10);
  EXPECT_EQ(found[2].epoch, 1000);
  EXPECT_EQ(fs::path(found[1].path).filename(), "epoch-010.pt");
  fs::remove_all(run);
}

}  // namespace
}  // namespace vit
