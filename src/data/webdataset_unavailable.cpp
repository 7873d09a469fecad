// A vit built without libarchive (CMake found no LibArchive, e.g. on a GPU
// image that lacks it): shards cannot be read or written, and each entry
// point says so. This file replaces webdataset.cpp in such a build.
#include "vit/data/webdataset.hpp"
#include "vit/error.hpp"

namespace vit::data {
namespace {

constexpr const char* kNoLibarchive =
    "this vit was built without libarchive (it was not found when vit was configured); "
    "install it (scripts/setup.sh) and rebuild";

[[noreturn]] void no_shards(const std::filesystem::path& where, const char* what) {
  throw Error(where.string() + ": cannot " + what + " WebDataset shards: " + kNoLibarchive);
}

}  // namespace

struct ShardReader::Archive {};

ShardReader::ShardReader(std::filesystem::path shard, ShardOptions options)
    : shard_(std::move(shard)), options_(options) {
  no_shards(shard_, "read");
}

ShardReader::~ShardReader() = default;

std::optional<ShardSample> ShardReader::next() {
  no_shards(shard_, "read");
}

int64_t count_shard_samples(const std::filesystem::path& shard, const ShardOptions&) {
  no_shards(shard, "read");
}

std::string write_shards(const std::vector<ShardInput>&, const std::filesystem::path& dir,
                         const std::string&, int64_t, const std::function<void(int64_t)>&) {
  no_shards(dir, "write");
}

}  // namespace vit::data
