#pragma once
// Image datasets stored as one file per image (Tiny-ImageNet, image folders):
// a reader lists the files and labels, and load_listing decodes them once and
// keeps the result in the decoded-image cache (see image_cache.hpp).
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "vit/data/dataset.hpp"
#include "vit/data/file_list.hpp"

namespace vit::data {

struct ImageListing {
  std::filesystem::path root;        // the dataset folder; the cache goes next to it
  std::string name;                  // cache name, e.g. "tiny-imagenet-200-rgb64"
  std::vector<std::string> classes;  // label order
  FileList train;                    // the training files, with their labels
  // The files the dataset sets apart for evaluation (its test/ or val/
  // folder), with their labels: the test split, or under data.validation
  // "folder" the validation split.
  FileList evaluation;
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

}  // namespace vit::data
