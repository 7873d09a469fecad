#pragma once
// WebDataset shards: plain tar files in which a sample is the run of members
// that share a key (the member's path up to the first dot of its file name)
// and differ in their extension (what follows that dot, lower-cased). vit
// reads an image (.jpg, .jpeg, .png or .webp) and its class (.cls: an ASCII
// integer, surrounding whitespace allowed); other members (.json, .txt, ...)
// are passed over, and so are folders and members whose file name has no dot
// or starts with one (".DS_Store"): they belong to no sample. A key keeps its
// folders ("n01440764/n01440764_10026"). These are the conventions of
// webdataset, timm and OpenCLIP.
//
// A shard is untrusted input, as the download archives are: nothing is ever
// written from it, every member is size-capped, and each fault is a vit::Error
// naming the shard and the sample's key (or the member), in one line.
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

// Reads one shard from its start, sample by sample, in the order stored.
// Faults (each a vit::Error "SHARD: ..." where SHARD is the shard's path,
// naming the key or member):
//  - a member whose name is absolute or has a ".." part;
//  - a member that is not a regular file or a folder (links, devices, FIFOs);
//  - a member over max_member_bytes;
//  - a sample without an image or without a .cls, two images or two .cls in
//    one sample, an empty image, a .cls that is not an integer, or outside
//    [0, num_classes) (a negative one always);
//  - the same key twice, split by another key's members;
//  - a damaged or truncated tar, or a file that is not a tar (a .tar.gz too);
//  - a shard with no sample at all (none left, with skip_corrupt).
// A member fault makes its sample (the members of its key) faulty; a member
// that belongs to no sample is refused too. With skip_corrupt, a faulty
// sample (not a damaged tar: the rest cannot be trusted) is left out with one
// warning naming it. A fault that is thrown ends the reader: next() throws
// it again.
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

// The samples in a shard (those that would be read), from the members'
// headers and .cls files alone: images are skipped, not read. Its faults
// are the reader's.
int64_t count_shard_samples(const std::filesystem::path& shard, const ShardOptions& options);

// One image to write into shards: its encoded bytes are copied as they are.
struct ShardInput {
  std::filesystem::path file;  // .jpg/.jpeg/.png/.webp (.bmp is converted to .png)
  int64_t label = 0;
};

// Writes `inputs` in order into shards of `per_shard` samples:
// DIR/PREFIX-000000.tar, DIR/PREFIX-000001.tar, ... (six digits, more when
// needed), each sample the key "%09d" (its index in `inputs`), an image member
// KEY.EXT (EXT lower-cased) and KEY.cls (the label in decimal, no newline),
// in a plain tar (ustar, pax where a name needs it) with mtime 0, so the same
// inputs give the same bytes. Each shard is written to a temporary file and
// renamed when complete (write_atomically), so a shard on disk is always
// whole. `progress` (may be empty) is called after each shard with the
// number of samples written so far, all shards together. Returns the brace
// pattern of the shards, relative to DIR ("PREFIX-{000000..000012}.tar"; for
// one shard its name, "PREFIX-000000.tar"). Before writing anything it
// refuses (vit::Error) per_shard < 1, no inputs, a PREFIX that is empty or
// has '/', '{' or '}', an input of another extension and a negative label;
// an input that cannot be read fails the shard being written.
std::string write_shards(const std::vector<ShardInput>& inputs, const std::filesystem::path& dir,
                         const std::string& prefix, int64_t per_shard,
                         const std::function<void(int64_t)>& progress = {});

}  // namespace vit::data
