#pragma once
// Image datasets stored as one file per image (Tiny-ImageNet, image folders):
// a reader lists the files and labels, and load_listing decodes them once and
// keeps the result in the decoded-image cache (see image_cache.hpp).
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "vit/data/dataset.hpp"

namespace vit::data {

struct ImageListing {
  std::filesystem::path root;        // the dataset folder; the cache goes next to it
  std::string name;                  // cache name, e.g. "tiny-imagenet-200-rgb64"
  std::vector<std::string> classes;  // label order
  std::vector<std::filesystem::path> train_files;
  std::vector<int64_t> train_labels;  // one per train file
  std::vector<std::filesystem::path> test_files;
  std::vector<int64_t> test_labels;
  std::vector<std::filesystem::path> index_files;  // e.g. wnids.txt: also part of the fingerprint
  int64_t channels = 3;                            // what every image is decoded to
  int64_t side = 64;
};

struct ImageLoadOptions {
  bool skip_corrupt = false;  // leave unreadable images out with a warning instead of failing
  std::string cache_dir;      // cache folder when root is read-only; "" = ~/.cache/vit
  bool use_cache = true;      // false: always decode, write nothing
  int64_t workers = 0;        // decoding threads; 0 = one per core, at least 2
};

// The decoded train and test splits: from the cache when one matches the
// current files (count, sizes, modification times), else decoded in parallel
// and cached. A cache that records skipped images is an error when
// skip_corrupt is false, as decoding would be.
DatasetPair load_listing(const ImageListing& listing, const ImageLoadOptions& options);

// Files in `dir` whose extension is one of `extensions` (lower case, with the
// dot; matched case-insensitively), sorted by name. Throws if `dir` is missing.
std::vector<std::filesystem::path> list_images(const std::filesystem::path& dir,
                                               const std::vector<std::string>& extensions);

}  // namespace vit::data
