#pragma once
// Unpacks a downloaded archive (tar, tar.gz, zip: libarchive tells them
// apart), treated as untrusted input: every entry must stay inside the
// destination, and the unpacked size is capped.
#include <cstdint>
#include <filesystem>
#include <string>

namespace vit::data {

struct UnpackLimits {
  uint64_t max_bytes = 0;          // total bytes of the files written; more is refused
  uint64_t max_entries = 1 << 20;  // entries of any kind
};

// Unpacks `archive` into `into` (created if absent). With a `top_folder`, every
// entry must lie in it, and its contents land directly in `into`. Refused with a
// vit::Error naming the archive and the entry:
//  - absolute paths and paths with a ".." part;
//  - symbolic links whose target is absolute or has a ".." part, hard links to
//    anything but a regular file unpacked before them;
//  - devices, FIFOs and sockets;
//  - more than limits.max_bytes or limits.max_entries;
//  - a damaged or truncated file, or one that is not a tar or zip archive.
// On an error `into` may hold part of the archive: the caller unpacks into a
// temporary folder and removes it.
void unpack_archive(const std::filesystem::path& archive, const std::filesystem::path& into,
                    const std::string& top_folder, const UnpackLimits& limits);

}  // namespace vit::data
