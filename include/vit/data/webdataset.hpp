#pragma once
// WebDataset shards (docs/data.md), as webdataset, timm and OpenCLIP write them: tar
// files in which a sample is the run of members sharing a key (the path up to the
// first dot of the file name, folders kept) and differing in extension (what follows
// that dot, lower-cased). vit reads an image (.jpg, .jpeg, .png or .webp) and its class
// (.cls: an ASCII integer, whitespace around it allowed). Other members (.json, ...),
// folders, and files whose name has no dot or starts with one (".DS_Store") are passed
// over: they belong to no sample. A shard is untrusted input: nothing is written from
// it, every member is size-capped, and each fault is a one-line vit::Error naming the
// shard and the sample's key (or the member).
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace vit::data {

struct ShardOptions {
  int64_t max_member_bytes = 64 << 20;  // a larger member is refused
  int64_t num_classes = 0;              // > 0: a .cls outside [0, num_classes) is a fault
  bool skip_corrupt = false;            // a faulty sample is skipped with a warning, not an error
};

struct ShardSample {
  std::string key;             // e.g. "n01440764/n01440764_10026"
  std::string image_ext;       // "jpg", "jpeg", "png" or "webp"
  std::vector<uint8_t> image;  // the encoded image, as stored
  int64_t label = 0;
};

// Reads one shard from its start, sample by sample, in the order stored. Faults
// (vit::Error "SHARD: ..." naming the key or member):
//  - a member with an absolute path or a ".." part, that is not a regular file or
//    folder (links, devices, FIFOs), or over max_member_bytes;
//  - a sample without an image or a .cls, with two of either, an empty image, a .cls
//    that is not an integer, negative, or outside [0, num_classes);
//  - the same key twice, split by another key's members;
//  - a damaged or truncated tar, or not a tar (a .tar.gz too);
//  - a shard with no sample at all (none left, with skip_corrupt).
// A member fault makes its sample faulty, and is refused in a member of no sample too.
// With skip_corrupt a faulty sample (not a damaged tar: the rest cannot be trusted) is
// left out with a warning. A thrown fault ends the reader: next() throws it again.
class ShardReader {
 public:
  ShardReader(std::filesystem::path shard, ShardOptions options);
  ~ShardReader();
  ShardReader(const ShardReader&) = delete;
  ShardReader& operator=(const ShardReader&) = delete;

  // The next sample, or nullopt at the shard's end.
  std::optional<ShardSample> next();
  const std::filesystem::path& path() const { return shard_; }

 private:
  struct Archive;  // libarchive's handle and the member read ahead
  std::filesystem::path shard_;
  ShardOptions options_;
  std::unique_ptr<Archive> archive_;
  int64_t samples_ = 0;
};

// The samples a reader would yield, from the members' headers and .cls files alone
// (images are skipped, not read). Its faults are the reader's.
int64_t count_shard_samples(const std::filesystem::path& shard, const ShardOptions& options);

// One image to write into shards: its encoded bytes are copied as they are.
struct ShardInput {
  std::filesystem::path file;  // .jpg/.jpeg/.png/.webp (.bmp is converted to .png)
  int64_t label = 0;
};

// Writes `inputs` in order into shards of `per_shard` samples, DIR/PREFIX-000000.tar,
// DIR/PREFIX-000001.tar, ... (six digits, more when needed). Sample i has the key
// "%09d" of i, an image member KEY.EXT (EXT lower-cased) and KEY.cls (the label in
// decimal). The same inputs give the same bytes, and a shard on disk is always whole.
// `progress` (may be empty) gets the samples written so far after each shard. Returns
// the shards' brace pattern relative to DIR ("PREFIX-{000000..000012}.tar"; one shard:
// its name). Refuses (vit::Error), before writing, per_shard < 1, no inputs, a PREFIX
// that is empty or has '/', '{' or '}', another extension or a negative label; an
// unreadable input fails the shard being written.
std::string write_shards(const std::vector<ShardInput>& inputs, const std::filesystem::path& dir,
                         const std::string& prefix, int64_t per_shard,
                         const std::function<void(int64_t)>& progress = {});

}  // namespace vit::data
