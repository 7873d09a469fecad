#pragma once
// Small archives in memory (tar, tar.gz, zip), entry by entry, through
// libarchive: the fuzz seeds (make_seeds.cpp) and the download, unpack and
// WebDataset tests build their archives with it, in the official layouts and
// in hostile ones.
#include <archive.h>
#include <archive_entry.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace vit::fuzz {

struct ArchiveEntry {
  enum class Type { kFile, kFolder, kSymlink, kHardlink };
  std::string path;
  std::string data;  // a file's bytes, or a link's target
  Type type = Type::kFile;
};

enum class ArchiveFormat { kTar, kTarGz, kZip };  // kTar: a plain tar, as WebDataset shards are

inline std::vector<uint8_t> make_archive(ArchiveFormat format,
                                         const std::vector<ArchiveEntry>& entries) {
  archive* a = archive_write_new();
  if (format == ArchiveFormat::kTar) {
    archive_write_set_format_pax_restricted(a);
  } else if (format == ArchiveFormat::kTarGz) {
    archive_write_set_format_pax_restricted(a);
    archive_write_add_filter_gzip(a);
  } else {
    archive_write_set_format_zip(a);
  }
  std::vector<uint8_t> out(16 * 1024 * 1024);  // ample for test and seed archives
  size_t used = 0;
  if (archive_write_open_memory(a, out.data(), out.size(), &used) != ARCHIVE_OK)
    throw std::runtime_error("archive_write_open_memory failed");
  for (const auto& e : entries) {
    archive_entry* entry = archive_entry_new();
    archive_entry_set_pathname(entry, e.path.c_str());
    archive_entry_set_perm(entry, e.type == ArchiveEntry::Type::kFolder ? 0755 : 0644);
    switch (e.type) {
      case ArchiveEntry::Type::kFile:
        archive_entry_set_filetype(entry, AE_IFREG);
        archive_entry_set_size(entry, static_cast<la_int64_t>(e.data.size()));
        break;
      case ArchiveEntry::Type::kFolder:
        archive_entry_set_filetype(entry, AE_IFDIR);
        break;
      case ArchiveEntry::Type::kSymlink:
        archive_entry_set_filetype(entry, AE_IFLNK);
        archive_entry_set_symlink(entry, e.data.c_str());
        break;
      case ArchiveEntry::Type::kHardlink:
        archive_entry_set_filetype(entry, AE_IFREG);
        archive_entry_set_hardlink(entry, e.data.c_str());
        break;
    }
    if (archive_write_header(a, entry) != ARCHIVE_OK)
      throw std::runtime_error(std::string("archive_write_header: ") + archive_error_string(a));
    if (e.type == ArchiveEntry::Type::kFile && !e.data.empty())
      archive_write_data(a, e.data.data(), e.data.size());
    archive_entry_free(entry);
  }
  archive_write_close(a);
  archive_write_free(a);
  out.resize(used);
  return out;
}

}  // namespace vit::fuzz
