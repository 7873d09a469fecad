#pragma once
// The decoded-image cache: after the first decode of an image dataset its uint8
// tensors go to one binary file (layout: image_cache.cpp), so later loads only read
// that file.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "vit/data/dataset.hpp"

namespace vit::data {

constexpr uint32_t kImageCacheVersion = 1;

// What the cached data was made from: the source file count and a hash of each
// one's relative path, size and mtime, and of the recipe ("tiny-imagenet-200 rgb
// 64"). Any change rebuilds the cache.
struct SourceFingerprint {
  uint64_t files = 0;
  uint64_t hash = 0;
  bool operator==(const SourceFingerprint& o) const { return files == o.files && hash == o.hash; }
};

// Stats every file (relative to `root` in the hash); throws naming a missing one.
SourceFingerprint fingerprint_sources(const std::filesystem::path& root,
                                      const std::vector<std::filesystem::path>& files,
                                      const std::string& recipe);

struct CachedImages {
  DatasetPair data;
  std::vector<std::string> skipped;  // error messages of the images left out
};

// Writes atomically. Throws vit::Error naming the file when it cannot be written.
void write_image_cache(const std::filesystem::path& file, const SourceFingerprint& source,
                       const CachedImages& cached);

// The cached data when `file` exists and was made from `source`; nullopt when it is
// absent, stale or damaged, with the reason in `why_not` when given.
std::optional<CachedImages> read_image_cache(const std::filesystem::path& file,
                                             const SourceFingerprint& source,
                                             std::string* why_not = nullptr);

// "<root>/.vit-cache-<name>.bin", or with `fallback` (root is read-only)
// "<cache_dir>/<name>-<hash of the absolute root>.bin", cache_dir "" meaning
// $XDG_CACHE_HOME/vit or ~/.cache/vit.
std::filesystem::path image_cache_path(const std::filesystem::path& root, const std::string& name,
                                       const std::string& cache_dir, bool fallback);

}  // namespace vit::data
