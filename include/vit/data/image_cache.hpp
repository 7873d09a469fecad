#pragma once
// The decoded-image cache: after the first decode of an image dataset its
// uint8 tensors go to one binary file, so later loads only read that file.
//
// File layout (version 1; native byte order, marked so another order is refused):
//   "VITCACHE" | u32 version | u32 0x01020304 | u64 source files | u64 source hash
//   | split train | split test | u64 skipped count, then each as a string
//   | u32 CRC-32 of everything after the magic | "ENDCACHE"
//   split  = i64 N, C, H, W | u64 class count, then each name as a string
//            | i64 labels[N] | u8 pixels[N*C*H*W]
//   string = u64 length | bytes
// Every length is checked against the bytes left before it is trusted.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "vit/data/dataset.hpp"

namespace vit::data {

constexpr uint32_t kImageCacheVersion = 1;

// What the cached data was made from: the number of source files and a hash
// of each one's relative path, size and modification time, and of the recipe
// (e.g. "tiny-imagenet-200 rgb 64"). Any change to these rebuilds the cache.
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

// Writes atomically (a temporary file renamed into place). Throws vit::Error
// naming the file when it cannot be written.
void write_image_cache(const std::filesystem::path& file, const SourceFingerprint& source,
                       const CachedImages& cached);

// The cached data when `file` exists and was made from `source`; nullopt when
// it is absent or stale. A damaged file (bad magic, version, truncation,
// checksum) also gives nullopt, with the reason in `why_not` when given.
std::optional<CachedImages> read_image_cache(const std::filesystem::path& file,
                                             const SourceFingerprint& source,
                                             std::string* why_not = nullptr);

// Where the cache for `root` goes: "<root>/.vit-cache-<name>.bin", or, when
// `fallback` is true (root is read-only), "<cache_dir>/<name>-<hash of the
// absolute root>.bin" with cache_dir "" meaning $XDG_CACHE_HOME/vit or ~/.cache/vit.
std::filesystem::path image_cache_path(const std::filesystem::path& root, const std::string& name,
                                       const std::string& cache_dir, bool fallback);

}  // namespace vit::data
