#include "vit/data/image_cache.hpp"

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "vit/error.hpp"

namespace fs = std::filesystem;

namespace {

class ImageCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("vit_image_cache_" + std::to_string(::getpid()));
    fs::create_directories(root_);
    std::ofstream(root_ / "a.jpg") << "aaaa";
    std::ofstream(root_ / "b.jpg") << "bb";
    cached_.data.train.images =
        torch::arange(2 * 3 * 2 * 2, torch::kInt64).to(torch::kUInt8).view({2, 3, 2, 2});
    cached_.data.train.labels = torch::tensor({1, 0}, torch::kInt64);
    cached_.data.train.classes = {"cat", "dog"};
    cached_.data.test.images = torch::full({1, 3, 2, 2}, 200, torch::kUInt8);
    cached_.data.test.labels = torch::tensor({1}, torch::kInt64);
    cached_.data.test.classes = {"cat", "dog"};
    cached_.skipped = {"c.jpg: cannot decode"};
    source_ = vit::data::fingerprint_sources(root_, {root_ / "a.jpg", root_ / "b.jpg"}, "recipe");
    file_ = root_ / "cache.bin";
  }
  void TearDown() override { fs::remove_all(root_); }

  std::string why_not() {
    std::string why;
    EXPECT_FALSE(vit::data::read_image_cache(file_, source_, &why).has_value());
    return why;
  }
  fs::path root_, file_;
  vit::data::CachedImages cached_;
  vit::data::SourceFingerprint source_;
};

TEST_F(ImageCacheTest, RoundTripsExactly) {
  vit::data::write_image_cache(file_, source_, cached_);
  auto back = vit::data::read_image_cache(file_, source_);
  ASSERT_TRUE(back.has_value());
  EXPECT_TRUE(torch::equal(back->data.train.images, cached_.data.train.images));
  EXPECT_TRUE(torch::equal(back->data.train.labels, cached_.data.train.labels));
  EXPECT_TRUE(torch::equal(back->data.test.images, cached_.data.test.images));
  EXPECT_EQ(back->data.test.classes, (std::vector<std::string>{"cat", "dog"}));
  EXPECT_EQ(back->skipped, cached_.skipped);
  // Header 32, train 32 + 8 + 22 + 16 + 24, test 32 + 8 + 22 + 8 + 12, skipped 8 + 28, end 12.
  EXPECT_EQ(fs::file_size(file_), 264u);
  EXPECT_FALSE(fs::exists(file_.string() + ".tmp" + std::to_string(::getpid())));
}

TEST_F(ImageCacheTest, FingerprintFollowsCountSizeTimeAndRecipe) {
  const auto again =
      vit::data::fingerprint_sources(root_, {root_ / "a.jpg", root_ / "b.jpg"}, "recipe");
  EXPECT_TRUE(again == source_);
  EXPECT_EQ(source_.files, 2u);
  EXPECT_FALSE(vit::data::fingerprint_sources(root_, {root_ / "a.jpg"}, "recipe") == source_);
  EXPECT_FALSE(vit::data::fingerprint_sources(root_, {root_ / "a.jpg", root_ / "b.jpg"}, "other") ==
               source_);
  fs::last_write_time(root_ / "b.jpg",
                      fs::last_write_time(root_ / "b.jpg") + std::chrono::seconds(5));
  EXPECT_FALSE(vit::data::fingerprint_sources(root_, {root_ / "a.jpg", root_ / "b.jpg"},
                                              "recipe") == source_);
  EXPECT_THROW(vit::data::fingerprint_sources(root_, {root_ / "missing.jpg"}, "r"), vit::Error);
}

TEST_F(ImageCacheTest, StaleAndDamagedCachesAreRefused) {
  EXPECT_EQ(why_not(), "no cache file");
  vit::data::write_image_cache(file_, source_, cached_);
  std::string why;
  vit::data::SourceFingerprint other = source_;
  other.hash ^= 1;
  EXPECT_FALSE(vit::data::read_image_cache(file_, other, &why).has_value());
  EXPECT_EQ(why, "stale: made from 2 source files, which have changed since (now 2)");

  const auto size = fs::file_size(file_);
  ASSERT_EQ(size, 264u);
  {  // change one pixel: the training pixels are bytes 110..133
    std::fstream f(file_, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(120);
    f.put('\x7f');
  }
  EXPECT_EQ(why_not(), "damaged: checksum mismatch");
  fs::resize_file(file_, 100);  // cut inside the training labels
  EXPECT_EQ(why_not(), "damaged: truncated");
  std::ofstream(file_, std::ios::binary) << "NOTACACHEFILE-------------------";
  EXPECT_EQ(why_not(), "damaged: not a vit cache file");
}

TEST_F(ImageCacheTest, PathsBesideTheDataOrInTheCacheFolder) {
  EXPECT_EQ(vit::data::image_cache_path("/data/tin", "tiny", "", false),
            fs::path("/data/tin/.vit-cache-tiny.bin"));
  const auto elsewhere = vit::data::image_cache_path("/data/tin", "tiny", "/tmp/c", true);
  EXPECT_EQ(elsewhere.parent_path(), fs::path("/tmp/c"));
  EXPECT_EQ(elsewhere.filename().string().substr(0, 5), "tiny-");
  EXPECT_NE(elsewhere, vit::data::image_cache_path("/data/other", "tiny", "/tmp/c", true));
}

}  // namespace
