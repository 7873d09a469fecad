// One listing of an image folder shared through a mapped file (data/shared_listing),
// and the mapped FileList under it.
#include "vit/data/shared_listing.hpp"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>

#include "error_of.hpp"
#include "vit/data/image_folder.hpp"

namespace {

namespace fs = std::filesystem;
using vit::data::FileList;
using vit::data::ImageListing;

class SharedListingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("vit_shared_listing_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    root_ = dir_ / "images";
    for (const char* split : {"train", "val"})
      for (const char* label : {"cat", "dog", "eel"})
        for (int i = 0; i < 400; ++i)
          touch(root_ / split / label / (std::string(label) + "_" + std::to_string(i) + ".jpg"));
  }
  void TearDown() override { fs::remove_all(dir_); }
  static void touch(const fs::path& file) {
    fs::create_directories(file.parent_path());
    std::ofstream(file) << "x";
  }
  ImageListing list() {
    ++listed_;
    return vit::data::list_image_folder(root_, 3, 32, /*val_folder=*/true);
  }
  ImageListing shared() {
    return vit::data::shared_image_folder_listing(
        root_, /*val_folder=*/true, (dir_ / "cache").string(), [&] { return list(); });
  }
  static void expect_same(const FileList& a, const FileList& b) {
    ASSERT_EQ(a.size(), b.size());
    EXPECT_EQ(a.num_classes(), b.num_classes());
    EXPECT_EQ(a.paths(), b.paths());
    EXPECT_EQ(a.labels(), b.labels());
  }
  fs::path dir_, root_;
  int listed_ = 0;
};

// The first call lists and writes; the next maps the file and lists nothing:
// the same files, labels and classes, with the list's bytes off the heap.
TEST_F(SharedListingTest, TheSecondRankMapsTheListTheFirstWrote) {
  const ImageListing own = list();
  const ImageListing first = shared();
  const ImageListing second = shared();
  EXPECT_EQ(listed_, 2);  // list() above, and the first shared() only
  ASSERT_TRUE(second.train.is_mapped());
  EXPECT_EQ(second.classes, own.classes);
  EXPECT_EQ(second.root, own.root);
  expect_same(second.train, own.train);
  expect_same(second.evaluation, own.evaluation);
  EXPECT_EQ(second.train.size(), 1200);
  // 1,200 names, 75 offsets and 1,200 labels stay in the file: the heap keeps
  // the three folders' paths and the empty containers' first blocks.
  EXPECT_LT(second.train.bytes(), own.train.bytes() / 2);
}

// A file added to a class folder changes that folder's time: the file is stale,
// listed again and written over; a damaged file is listed again too.
TEST_F(SharedListingTest, AChangedFolderOrADamagedFileIsListedAgain) {
  shared();
  std::this_thread::sleep_for(std::chrono::milliseconds(20));  // past the clock's granularity
  touch(root_ / "train" / "dog" / "dog_new.jpg");
  const ImageListing after = shared();
  EXPECT_EQ(listed_, 2);
  EXPECT_EQ(after.train.size(), 1201);
  fs::path file;
  for (const auto& entry : fs::directory_iterator(dir_ / "cache"))
    if (entry.path().extension() == ".bin") file = entry.path();
  ASSERT_FALSE(file.empty());
  const std::string key = vit::data::image_folder_key(root_, true);
  ASSERT_TRUE(vit::data::map_listing_file(file, key));
  {
    std::fstream bytes(file, std::ios::in | std::ios::out | std::ios::binary);
    bytes.seekp(-3, std::ios::end);  // inside the last list's names
    bytes.put('?');
  }
  EXPECT_FALSE(vit::data::map_listing_file(file, key));  // the CRC-32 no longer holds
  EXPECT_FALSE(vit::data::map_listing_file(dir_ / "none.bin", key));
  EXPECT_EQ(shared().train.size(), 1201);
  EXPECT_EQ(listed_, 3);
}

// Where the cache cannot be written, each rank lists for itself.
TEST_F(SharedListingTest, AnUnwritableCacheListsInProcess) {
  touch(dir_ / "cache");  // a file where the folder should be
  const ImageListing listing = shared();
  EXPECT_FALSE(listing.train.is_mapped());
  EXPECT_EQ(listing.train.size(), 1200);
}

// A folder that does not list is its own one-line error, listed once.
TEST_F(SharedListingTest, AFolderThatDoesNotListIsItsOwnErrorOnce) {
  fs::remove_all(root_ / "train" / "dog");
  fs::remove_all(root_ / "train" / "eel");
  EXPECT_EQ(vit::testing::error_of([&] { shared(); }),
            (root_ / "train").string() +
                ": 1 class folders, expected at least 2 (root/<class>/*.png|jpg|jpeg|bmp|webp)");
  EXPECT_EQ(listed_, 1);
}

TEST(MappedFileList, BytesThatEndEarlyOrDoNotAddUpAreErrors) {
  FileList list(3);
  for (int i = 0; i < 40; ++i)
    list.add("/d", "f" + std::to_string(i), i % 3);
  std::ostringstream out;
  list.write(out);
  const std::string bytes = out.str();
  const char* at = bytes.data();
  const FileList back = FileList::mapped(at, bytes.data() + bytes.size(), nullptr);
  EXPECT_EQ(at, bytes.data() + bytes.size());
  EXPECT_EQ(back.paths(), list.paths());
  EXPECT_EQ(back.labels(), list.labels());
  at = bytes.data();
  EXPECT_EQ(vit::testing::error_of(
                [&] { FileList::mapped(at, bytes.data() + bytes.size() - 8, nullptr); }),
            "a file list ends early");
  std::string negative = bytes;
  negative[8] = '\xff';  // the size's low byte: a size below the folder's first file
  at = negative.data();
  EXPECT_NE(vit::testing::error_of([&] {
              FileList::mapped(at, negative.data() + negative.size(), nullptr);
            }).find("a file list's"),
            std::string::npos);
}

}  // namespace
