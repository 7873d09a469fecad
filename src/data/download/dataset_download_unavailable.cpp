// A vit built without libcurl, libarchive or OpenSSL's libcrypto (CMake's
// VIT_DOWNLOADS is OFF, e.g. on a GPU image that has none of them): the data
// must already be in data.root. This file replaces dataset_download.cpp,
// download.cpp, checksum.cpp and archive_unpack.cpp in such a build.
#include <filesystem>

#include "vit/data/download/archive_unpack.hpp"
#include "vit/data/download/dataset_archives.hpp"
#include "vit/data/download/dataset_download.hpp"
#include "vit/error.hpp"

namespace vit::data {
namespace {

constexpr const char* kLeftOut =
    "this vit was built without dataset downloads (libcurl, libarchive and libssl were not "
    "found when it was configured)";

}  // namespace

bool download_dataset(const DataConfig& data) {
  const std::string missing = missing_file(data.dataset, data.root);
  if (missing.empty()) return false;
  throw Error(data.root + ": " + missing + " is missing, and " + kLeftOut +
              "; put the dataset there by hand or use a vit built with them");
}

void unpack_archive(const std::filesystem::path& archive, const std::filesystem::path&,
                    const std::string&, const UnpackLimits&) {
  throw Error(archive.string() + ": cannot unpack: " + kLeftOut);
}

}  // namespace vit::data
