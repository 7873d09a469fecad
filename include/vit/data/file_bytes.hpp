#pragma once
// Reads of the binary dataset formats. Every failure names the file.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <vector>

namespace vit::data {

// The file's bytes. Throws "PATH: file not found" / "PATH: cannot read", and
// a vit::Error (not std::bad_alloc) when the file does not fit in memory.
std::vector<uint8_t> read_file_bytes(const std::filesystem::path& path);

// A gzip file's decompressed bytes, or a plain file's bytes (zlib reads both),
// read in pieces, so that a reader can check a header's claims against what
// the file can hold before it allocates for them.
class MaybeGzippedFile {
 public:
  // A deflate stream expands its input at most 1032-fold (RFC 1951's longest match,
  // 258 bytes, in 2 bits).
  static constexpr uint64_t kMaxGzipRatio = 1032;

  explicit MaybeGzippedFile(const std::filesystem::path& path);
  ~MaybeGzippedFile();
  MaybeGzippedFile(const MaybeGzippedFile&) = delete;
  MaybeGzippedFile& operator=(const MaybeGzippedFile&) = delete;

  uint64_t file_size() const { return file_size_; }  // on disk
  bool gzipped() const;                              // known after the first read
  // Its size when plain, the bound above when gzipped.
  uint64_t max_data_bytes() const;
  // Reads up to `size` bytes; fewer only at the end of the data. A damaged or
  // cut-off gzip stream is an error naming the file.
  size_t read(uint8_t* out, size_t size);
  // Counts the bytes left, up to `cap`; returns cap + 1 when there are more.
  uint64_t count_rest(uint64_t cap);

 private:
  std::filesystem::path path_;
  uint64_t file_size_ = 0;
  struct Stream;
  std::unique_ptr<Stream> stream_;
};

}  // namespace vit::data
