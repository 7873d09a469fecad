#include "vit/data/file_bytes.hpp"

#include <cstdio>
#include <exception>
#include <string>

#include <zlib.h>

#include "vit/error.hpp"

namespace vit::data {
namespace fs = std::filesystem;

namespace {

void require_regular_file(const fs::path& path) {
  std::error_code ec;
  if (!fs::exists(path, ec)) throw Error(path.string() + ": file not found");
  if (!fs::is_regular_file(path, ec)) throw Error(path.string() + ": not a regular file");
}

uint64_t size_of(const fs::path& path) {
  std::error_code ec;
  const auto size = fs::file_size(path, ec);
  if (ec) throw Error(path.string() + ": cannot read its size (" + ec.message() + ")");
  return size;
}

}  // namespace

std::vector<uint8_t> read_file_bytes(const fs::path& path) {
  require_regular_file(path);
  std::unique_ptr<FILE, int (*)(FILE*)> file(std::fopen(path.c_str(), "rb"), &std::fclose);
  if (!file) throw Error(path.string() + ": cannot open for reading");
  const uint64_t size = size_of(path);
  std::vector<uint8_t> bytes;
  try {
    bytes.resize(size);
  } catch (const std::exception&) {  // std::bad_alloc, or std::length_error past max_size()
    throw Error(path.string() + ": its " + std::to_string(size) + " bytes do not fit in memory");
  }
  if (size > 0 && std::fread(bytes.data(), 1, size, file.get()) != size) {
    throw Error(path.string() + ": read fewer than its " + std::to_string(size) + " bytes");
  }
  return bytes;
}

struct MaybeGzippedFile::Stream {
  gzFile file = nullptr;
};

MaybeGzippedFile::MaybeGzippedFile(const fs::path& path)
    : path_(path), stream_(std::make_unique<Stream>()) {
  require_regular_file(path);
  file_size_ = size_of(path);
  stream_->file = gzopen(path.c_str(), "rb");
  if (stream_->file == nullptr) throw Error(path.string() + ": cannot open for reading");
  gzbuffer(stream_->file, 1 << 17);
}

MaybeGzippedFile::~MaybeGzippedFile() {
  if (stream_->file != nullptr) gzclose(stream_->file);
}

bool MaybeGzippedFile::gzipped() const {
  return gzdirect(stream_->file) == 0;
}

uint64_t MaybeGzippedFile::max_data_bytes() const {
  return gzipped() ? file_size_ * kMaxGzipRatio : file_size_;
}

size_t MaybeGzippedFile::read(uint8_t* out, size_t size) {
  constexpr size_t kChunk = size_t{1} << 30;  // gzread takes an unsigned count
  size_t done = 0;
  while (done < size) {
    const auto want = static_cast<unsigned>(std::min(size - done, kChunk));
    const int got = gzread(stream_->file, out + done, want);
    int code = 0;
    const char* message = gzerror(stream_->file, &code);
    // gzread returns what it has when the stream is cut off and flags the error.
    if (got < 0 || (code != Z_OK && code != Z_BUF_ERROR) || (code == Z_BUF_ERROR && got == 0))
      throw Error(path_.string() + ": damaged gzip data (" + message + ")");
    if (got == 0) break;
    done += static_cast<size_t>(got);
  }
  return done;
}

uint64_t MaybeGzippedFile::count_rest(uint64_t cap) {
  uint8_t buffer[1 << 14];
  uint64_t count = 0;
  while (count <= cap) {
    const size_t got = read(buffer, sizeof buffer);
    if (got == 0) return count;
    count += got;
  }
  return cap + 1;
}

}  // namespace vit::data
