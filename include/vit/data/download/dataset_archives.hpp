#pragma once
// The official downloads of every dataset vit reads, with the checksums their
// publishers give (MD5, as torchvision checks them too), and what a complete
// data.root holds. The one table of URLs and sums: dataset_archives.cpp.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "vit/config.hpp"

namespace vit::data {

enum class ArchiveLayout {
  kTarGz,    // one .tar.gz, unpacked
  kZip,      // one .zip, unpacked
  kGzFiles,  // files kept as they are (IDX .gz: the reader opens them gzipped)
};

struct DownloadFile {
  std::string name;  // the file's name at base_url, and on disk
  std::string md5;   // published MD5, lower-case hexadecimal
};

struct DatasetArchive {
  DatasetKind dataset;
  std::string base_url;             // the files' folder, ending in '/'
  std::vector<DownloadFile> files;  // one archive, or the files themselves (kGzFiles)
  ArchiveLayout layout;
  // The archive's top folder, whose contents become data.root ("" = none).
  std::string top_folder;
  // Bytes of the dataset on disk (about); unpacking stops at kUnpackFactor times this.
  uint64_t dataset_bytes;
};

// An archive that unpacks to more than this multiple of its dataset's known
// size is refused (a zip bomb, or not the dataset).
constexpr uint64_t kUnpackFactor = 4;

// The official download of `dataset`; nullopt for image-folder, which has none.
std::optional<DatasetArchive> official_archive(DatasetKind dataset);

// The first file or folder that `dataset`'s reader needs and `root` lacks, or
// "" when `root` holds them all (the same names the readers open; the
// MNIST-style files gzipped or not, with '-' or '.' before "idx").
std::string missing_file(DatasetKind dataset, const std::filesystem::path& root);

}  // namespace vit::data
