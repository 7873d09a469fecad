#include "vit/data/file_bytes.hpp"

#include <cstdio>
#include <memory>
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

}  // namespace

std::vector<uint8_t> read_file_bytes(const fs::path& path) {
  require_regular_file(path);
  std::unique_ptr<FILE, int (*)(FILE*)> file(std::fopen(path.c_str(), "rb"), &std::fclose);
  if (!file) throw Error(path.string() + ": cannot open for reading");
  std::error_code ec;
  const auto size = fs::file_size(path, ec);
  if (ec) throw Error(path.string() + ": cannot read its size (" + ec.message() + ")");
  std::vector<uint8_t> bytes(size);
  if (size > 0 && std::fread(bytes.data(), 1, size, file.get()) != size) {
    throw Error(path.string() + ": read fewer than its " + std::to_string(size) + " bytes");
  }
  return bytes;
}

std::vector<uint8_t> read_maybe_gzipped(const fs::path& path) {
  require_regular_file(path);
  std::unique_ptr<gzFile_s, int (*)(gzFile)> file(gzopen(path.c_str(), "rb"), &gzclose);
  if (!file) throw Error(path.string() + ": cannot open for reading");
  gzbuffer(file.get(), 1 << 17);
  std::vector<uint8_t> bytes;
  constexpr size_t kChunk = size_t{1} << 22;
  while (true) {
    const size_t old_size = bytes.size();
    bytes.resize(old_size + kChunk);
    const int got = gzread(file.get(), bytes.data() + old_size, static_cast<unsigned>(kChunk));
    if (got < 0) {
      int code = 0;
      const char* message = gzerror(file.get(), &code);
      throw Error(path.string() + ": damaged gzip data (" + message + ")");
    }
    bytes.resize(old_size + static_cast<size_t>(got));
    if (got == 0) break;
  }
  // gzread returns what it has when the stream is cut off and flags the error.
  int code = 0;
  const char* message = gzerror(file.get(), &code);
  if (code != Z_OK) throw Error(path.string() + ": damaged gzip data (" + message + ")");
  return bytes;
}

}  // namespace vit::data
