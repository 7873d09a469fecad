// The compact file list (data/file_list) and the parallel folder listing
// that fills it (data/folder_listing).
#include "vit/data/file_list.hpp"

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "error_of.hpp"
#include "vit/data/folder_listing.hpp"

namespace {

namespace fs = std::filesystem;
using vit::data::FileList;
using vit::testing::error_of;

// ImageNet's training names: n<8 digits>/n<8 digits>_<number>.JPEG.
std::string wnid(int64_t k) {
  return fmt::format("n{:08d}", 1440764 + 7919 * k);
}

TEST(FileList, GivesBackEveryPathNameAndLabelAcrossFoldersAndBlocks) {
  FileList list(1000);
  std::vector<fs::path> paths;
  std::vector<int64_t> labels;
  for (int64_t k = 0; k < 3; ++k) {
    const fs::path folder = fs::path("/data/train") / wnid(k);
    for (int64_t i = 0; i < 37; ++i) {  // 37: folders and 16-name blocks out of step
      const std::string name = wnid(k) + "_" + std::to_string(i * 13) + ".JPEG";
      list.add(folder, name, 999 - k);
      paths.push_back(folder / name);
      labels.push_back(999 - k);
    }
  }
  list.add("/other", std::string(255, 'x') + ".png", 0);  // Linux's longest file name
  paths.push_back(fs::path("/other") / (std::string(255, 'x') + ".png"));
  labels.push_back(0);
  ASSERT_EQ(list.size(), int64_t(paths.size()));
  for (int64_t i = 0; i < list.size(); ++i) {
    EXPECT_EQ(list.path(i), paths[i]) << i;
    EXPECT_EQ(list.label(i), labels[i]) << i;
  }
  EXPECT_EQ(list.paths(), paths);
  EXPECT_EQ(list.labels(), labels);
  EXPECT_EQ(list.folder(40), "/data/train/" + wnid(1));
}

// One byte a label up to 256 classes, two up to 65,536, four beyond: the
// largest label of each width comes back.
TEST(FileList, LabelsKeepTheirValueInEveryWidth) {
  for (const int64_t classes : {2, 256, 257, 65536, 65537, 100000}) {
    FileList list(classes);
    list.add("/a", "first.png", classes - 1);
    list.add("/a", "second.png", 0);
    EXPECT_EQ(list.label(0), classes - 1) << classes;
    EXPECT_EQ(list.label(1), 0) << classes;
  }
}

TEST(FileList, RefusesLabelsOutsideItsClassesAndIndicesOutsideItself) {
  FileList list(3);
  EXPECT_EQ(error_of([&] { list.add("/a", "x.png", 3); }), "/a/x.png: label 3 outside [0, 3)");
  EXPECT_EQ(error_of([&] { list.add("/a", "x.png", -1); }), "/a/x.png: label -1 outside [0, 3)");
  list.add("/a", "x.png", 2);
  EXPECT_EQ(error_of([&] { list.path(1); }), "file 1 of a list of 1");
  EXPECT_EQ(error_of([&] { list.label(-1); }), "file -1 of a list of 1");
}

// A million ImageNet-like names (1,000 folders of 1,000) in at most 16 bytes
// an image: a name shares its folder's "nXXXXXXXX_" and most digits with the
// one before it, so it keeps 2 length bytes and 1-6 bytes of its own; every
// 16th is whole (20-24 bytes, under 1.5 an image) with an 8-byte offset (0.5
// an image); the label is 2 bytes (1,000 classes). A std::filesystem::path
// a file took about 100.
TEST(FileList, AMillionImageNetNamesTakeUnderSixteenBytesEach) {
  FileList list(1000);
  for (int64_t k = 0; k < 1000; ++k) {
    const std::string folder = "/data/imagenet/train/" + wnid(k);
    for (int64_t i = 0; i < 1000; ++i)
      list.add(folder, wnid(k) + "_" + std::to_string(10000 + i * 37) + ".JPEG", k);
  }
  ASSERT_EQ(list.size(), 1000000);
  const double per_image = double(list.bytes()) / double(list.size());
  EXPECT_LE(per_image, 16.0);
  EXPECT_GE(per_image, 4.0);  // the labels and suffixes alone
  EXPECT_EQ(list.path(654321).string(), "/data/imagenet/train/" + wnid(654) + "/" + wnid(654) +
                                            "_" + std::to_string(10000 + 321 * 37) + ".JPEG");
  EXPECT_EQ(list.label(654321), 654);
}

class FolderListingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("vit_folder_listing_" + std::to_string(::getpid()));
    fs::remove_all(root_);
  }
  void TearDown() override { fs::remove_all(root_); }
  void touch(const fs::path& file) {
    fs::create_directories(file.parent_path());
    std::ofstream(file) << "x";
  }
  fs::path root_;
};

// Image files by extension, in any case, sorted; links to files count;
// folders named like images and other files do not.
TEST_F(FolderListingTest, ListsImageFilesSortedAndLeavesTheRestOut) {
  for (const char* name : {"b.JPEG", "a.png", "c.Jpg", "notes.txt", "noext"})
    touch(root_ / "one" / name);
  fs::create_directories(root_ / "one" / "folder.png");
  fs::create_symlink(root_ / "one" / "a.png", root_ / "one" / "link.png");
  EXPECT_EQ(vit::data::image_names(root_ / "one", {".png", ".jpg", ".jpeg"}),
            (std::vector<std::string>{"a.png", "b.JPEG", "c.Jpg", "link.png"}));
}

// Many folders on several threads come back in the order given, each file
// with its folder's label.
TEST_F(FolderListingTest, ManyFoldersOnManyThreadsKeepTheirOrder) {
  std::vector<vit::data::LabelledFolder> folders;
  for (int64_t k = 0; k < 40; ++k) {
    const fs::path dir = root_ / fmt::format("class{:02d}", 39 - k);
    for (int64_t i = 0; i <= k % 5; ++i)
      touch(dir / fmt::format("{}.png", i));
    folders.push_back({dir, k});
  }
  const FileList list = vit::data::list_labelled_folders(folders, {".png"}, 40, /*threads=*/7);
  int64_t row = 0;
  for (int64_t k = 0; k < 40; ++k) {
    for (int64_t i = 0; i <= k % 5; ++i, ++row) {
      EXPECT_EQ(list.path(row), folders[k].dir / fmt::format("{}.png", i));
      EXPECT_EQ(list.label(row), k);
    }
  }
  EXPECT_EQ(list.size(), row);
}

// A missing folder, or a path longer than Linux's 4,096 bytes, is a one-line
// error naming it, from whichever thread met it.
TEST_F(FolderListingTest, AMissingFolderOrAnOverlongPathIsAOneLineError) {
  touch(root_ / "a" / "x.png");
  const std::vector<vit::data::LabelledFolder> folders = {{root_ / "a", 0}, {root_ / "gone", 1}};
  EXPECT_EQ(error_of([&] { vit::data::list_labelled_folders(folders, {".png"}, 2); }),
            (root_ / "gone").string() + ": folder not found");
  const fs::path long_path = root_ / std::string(4100, 'd');
  EXPECT_EQ(error_of([&] { vit::data::image_names(long_path, {".png"}); }),
            long_path.string() + ": cannot list the folder (File name too long)");
}

}  // namespace
