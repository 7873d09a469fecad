#pragma once
// Whole-file reads for the binary dataset formats. Every failure names the file.
#include <cstdint>
#include <filesystem>
#include <vector>

namespace vit::data {

// The file's bytes. Throws "PATH: file not found" / "PATH: cannot read".
std::vector<uint8_t> read_file_bytes(const std::filesystem::path& path);

// The decompressed bytes of a gzip file, or the bytes of a plain file (zlib
// reads both). A damaged or cut-off gzip stream is an error naming the file.
std::vector<uint8_t> read_maybe_gzipped(const std::filesystem::path& path);

}  // namespace vit::data
