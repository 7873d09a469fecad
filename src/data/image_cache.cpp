// File layout (version 1; native byte order, marked so another order is refused):
//   "VITCACHE" | u32 version | u32 0x01020304 | u64 source files | u64 source hash
//   | split train | split test | u64 skipped count, then each as a string
//   | u32 CRC-32 of everything after the magic | "ENDCACHE"
//   split  = i64 N, C, H, W | u64 class count, then each name as a string
//            | i64 labels[N] | u8 pixels[N*C*H*W]
//   string = u64 length | bytes
// Every length is checked against the bytes left before it is trusted. A damaged
// file (bad magic, version, truncation, checksum) reads as no cache.
#include "vit/data/image_cache.hpp"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>

#include <unistd.h>

#include <ATen/Parallel.h>
#include <torch/torch.h>
#include <zlib.h>

#include "vit/atomic_write.hpp"
#include "vit/error.hpp"

namespace vit::data {
namespace fs = std::filesystem;

namespace {

constexpr char kMagic[8] = {'V', 'I', 'T', 'C', 'A', 'C', 'H', 'E'};
constexpr char kEndMagic[8] = {'E', 'N', 'D', 'C', 'A', 'C', 'H', 'E'};
constexpr uint32_t kByteOrderMark = 0x01020304;

uint64_t fnv1a(uint64_t hash, const void* data, size_t size) {
  const auto* bytes = static_cast<const uint8_t*>(data);
  for (size_t i = 0; i < size; ++i)
    hash = (hash ^ bytes[i]) * 0x100000001b3ULL;
  return hash;
}

// CRC-32 of a large buffer on all threads: per-chunk CRCs joined with crc32_combine.
uint32_t crc32_parallel(uint32_t crc, const uint8_t* data, size_t size) {
  constexpr size_t kChunk = size_t{1} << 24;
  const auto chunks = static_cast<int64_t>((size + kChunk - 1) / kChunk);
  if (chunks <= 1) return static_cast<uint32_t>(crc32_z(crc, data, size));
  std::vector<uLong> parts(chunks);
  at::parallel_for(0, chunks, 1, [&](int64_t begin, int64_t end) {
    for (int64_t c = begin; c < end; ++c) {
      const size_t offset = c * kChunk;
      parts[c] = crc32_z(0, data + offset, std::min(kChunk, size - offset));
    }
  });
  uLong out = crc;
  for (int64_t c = 0; c < chunks; ++c) {
    const size_t length = std::min(kChunk, size - static_cast<size_t>(c) * kChunk);
    out = crc32_combine(out, parts[c], static_cast<z_off_t>(length));
  }
  return static_cast<uint32_t>(out);
}

using File = std::unique_ptr<FILE, int (*)(FILE*)>;

class Writer {
 public:
  Writer(const fs::path& path) : path_(path), file_(std::fopen(path.c_str(), "wb"), &std::fclose) {
    if (!file_) throw Error(path.string() + ": cannot create the cache file");
  }
  void bytes(const void* data, size_t size, bool checked = true) {
    if (size > 0 && std::fwrite(data, 1, size, file_.get()) != size) {
      throw Error(path_.string() + ": cannot write the cache file (disk full?)");
    }
    if (checked) crc_ = crc32_parallel(crc_, static_cast<const uint8_t*>(data), size);
  }
  template <typename T>
  void value(T v) {
    bytes(&v, sizeof v);
  }
  void text(const std::string& s) {
    value<uint64_t>(s.size());
    bytes(s.data(), s.size());
  }
  uint32_t crc() const { return crc_; }
  void close() {
    if (std::fclose(file_.release()) != 0)
      throw Error(path_.string() + ": cannot finish the cache file");
  }

 private:
  fs::path path_;
  File file_;
  uint32_t crc_ = 0;
};

// Reads with every length checked against what is left in the file; a
// shortfall or an impossible value throws Damaged, which the caller turns into
// a rebuild.
struct Damaged {
  std::string why;
};

class Reader {
 public:
  Reader(FILE* file, uint64_t size) : file_(file), left_(size) {}
  void bytes(void* data, uint64_t size, bool checked = true) {
    if (size > left_) throw Damaged{"truncated"};
    if (size > 0 && std::fread(data, 1, size, file_) != size) throw Damaged{"read error"};
    left_ -= size;
    if (checked) crc_ = crc32_parallel(crc_, static_cast<const uint8_t*>(data), size);
  }
  template <typename T>
  T value() {
    T v;
    bytes(&v, sizeof v);
    return v;
  }
  std::string text() {
    const auto size = value<uint64_t>();
    if (size > left_) throw Damaged{"a string runs past the end"};
    std::string s(size, '\0');
    bytes(s.data(), size);
    return s;
  }
  uint64_t left() const { return left_; }
  uint32_t crc() const { return crc_; }

 private:
  FILE* file_;
  uint64_t left_;
  uint32_t crc_ = 0;
};

void write_split(Writer& out, const Dataset& d) {
  const auto images = d.images.contiguous();
  for (int64_t dim = 0; dim < 4; ++dim)
    out.value<int64_t>(images.size(dim));
  out.value<uint64_t>(d.classes.size());
  for (const auto& name : d.classes)
    out.text(name);
  const auto labels = d.labels.to(torch::kInt64).contiguous();
  out.bytes(labels.data_ptr<int64_t>(), labels.numel() * sizeof(int64_t));
  out.bytes(images.data_ptr<uint8_t>(), images.numel());
}

Dataset read_split(Reader& in, const std::string& source) {
  int64_t shape[4];
  for (auto& s : shape) {
    s = in.value<int64_t>();
    if (s < 0) throw Damaged{"negative dimension"};
  }
  const auto classes = in.value<uint64_t>();
  if (classes > in.left()) throw Damaged{"impossible class count"};
  Dataset d;
  for (uint64_t k = 0; k < classes; ++k)
    d.classes.push_back(in.text());
  // N * C * H * W bytes of pixels must fit in what is left, so check before allocating.
  const auto n = static_cast<uint64_t>(shape[0]);
  const unsigned __int128 pixels =
      static_cast<unsigned __int128>(n) * shape[1] * shape[2] * shape[3];
  if (n > in.left() / 8 || pixels > in.left() - 8 * n) throw Damaged{"truncated"};
  d.labels = torch::empty({shape[0]}, torch::kInt64);
  in.bytes(d.labels.data_ptr<int64_t>(), n * 8);
  d.images = torch::empty({shape[0], shape[1], shape[2], shape[3]}, torch::kUInt8);
  in.bytes(d.images.data_ptr<uint8_t>(), static_cast<uint64_t>(pixels));
  if (n > 0 && (d.labels.min().item<int64_t>() < 0 ||
                d.labels.max().item<int64_t>() >= static_cast<int64_t>(classes))) {
    throw Damaged{"a label outside the class list"};
  }
  d.source = source;
  return d;
}

fs::path default_cache_dir() {
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg) return fs::path(xdg) / "vit";
  if (const char* home = std::getenv("HOME"); home && *home)
    return fs::path(home) / ".cache" / "vit";
  return fs::temp_directory_path() / "vit-cache";
}

}  // namespace

SourceFingerprint fingerprint_sources(const fs::path& root, const std::vector<fs::path>& files,
                                      const std::string& recipe) {
  SourceFingerprint out;
  out.hash = fnv1a(0xcbf29ce484222325ULL, recipe.data(), recipe.size());
  for (const auto& file : files) {
    std::error_code ec;
    const auto size = fs::file_size(file, ec);
    if (ec) throw Error(file.string() + ": file not found (" + ec.message() + ")");
    const auto mtime = fs::last_write_time(file, ec).time_since_epoch().count();
    if (ec)
      throw Error(file.string() + ": cannot read its modification time (" + ec.message() + ")");
    const std::string relative = file.lexically_relative(root).generic_string();
    out.hash = fnv1a(out.hash, relative.data(), relative.size() + 1);  // with the '\0' separator
    out.hash = fnv1a(out.hash, &size, sizeof size);
    out.hash = fnv1a(out.hash, &mtime, sizeof mtime);
    ++out.files;
  }
  return out;
}

void write_image_cache(const fs::path& file, const SourceFingerprint& source,
                       const CachedImages& cached) {
  write_atomically(file.string(), [&](const std::string& temporary) {
    Writer out(temporary);
    out.bytes(kMagic, sizeof kMagic, /*checked=*/false);
    out.value<uint32_t>(kImageCacheVersion);
    out.value<uint32_t>(kByteOrderMark);
    out.value<uint64_t>(source.files);
    out.value<uint64_t>(source.hash);
    write_split(out, cached.data.train);
    write_split(out, cached.data.test);
    out.value<uint64_t>(cached.skipped.size());
    for (const auto& message : cached.skipped)
      out.text(message);
    const uint32_t crc = out.crc();
    out.bytes(&crc, sizeof crc, /*checked=*/false);
    out.bytes(kEndMagic, sizeof kEndMagic, /*checked=*/false);
    out.close();
  });
}

std::optional<CachedImages> read_image_cache(const fs::path& file, const SourceFingerprint& source,
                                             std::string* why_not) {
  auto fail = [&](const std::string& why) -> std::optional<CachedImages> {
    if (why_not) *why_not = why;
    return std::nullopt;
  };
  std::error_code ec;
  const auto size = fs::file_size(file, ec);
  if (ec) return fail("no cache file");
  File handle(std::fopen(file.c_str(), "rb"), &std::fclose);
  if (!handle) return fail("cannot open the cache file");
  Reader in(handle.get(), size);
  try {
    char magic[8];
    in.bytes(magic, sizeof magic, /*checked=*/false);
    if (std::memcmp(magic, kMagic, sizeof magic) != 0) return fail("damaged: not a vit cache file");
    const auto version = in.value<uint32_t>();
    if (version != kImageCacheVersion) {
      return fail("made by cache version " + std::to_string(version) + ", expected " +
                  std::to_string(kImageCacheVersion));
    }
    if (in.value<uint32_t>() != kByteOrderMark) return fail("written with another byte order");
    SourceFingerprint stored;
    stored.files = in.value<uint64_t>();
    stored.hash = in.value<uint64_t>();
    if (!(stored == source)) {
      return fail("stale: made from " + std::to_string(stored.files) +
                  " source files, which have changed since (now " + std::to_string(source.files) +
                  ")");
    }
    CachedImages out;
    out.data.train = read_split(in, file.string());
    out.data.test = read_split(in, file.string());
    const auto skipped = in.value<uint64_t>();
    if (skipped > in.left()) throw Damaged{"impossible skipped count"};
    for (uint64_t i = 0; i < skipped; ++i)
      out.skipped.push_back(in.text());
    const uint32_t computed = in.crc();
    uint32_t crc = 0;
    in.bytes(&crc, sizeof crc, /*checked=*/false);
    if (crc != computed) throw Damaged{"checksum mismatch"};
    char end[8];
    in.bytes(end, sizeof end, /*checked=*/false);
    if (std::memcmp(end, kEndMagic, sizeof end) != 0 || in.left() != 0) throw Damaged{"bad ending"};
    return out;
  } catch (const Damaged& d) {
    return fail("damaged: " + d.why);
  }
}

fs::path image_cache_path(const fs::path& root, const std::string& name,
                          const std::string& cache_dir, bool fallback) {
  if (!fallback) return root / (".vit-cache-" + name + ".bin");
  std::error_code ec;
  const std::string absolute = fs::weakly_canonical(fs::absolute(root), ec).string();
  char hash[17];
  std::snprintf(hash, sizeof hash, "%016llx",
                static_cast<unsigned long long>(
                    fnv1a(0xcbf29ce484222325ULL, absolute.data(), absolute.size())));
  const fs::path dir = cache_dir.empty() ? default_cache_dir() : fs::path(cache_dir);
  return dir / (name + "-" + hash + ".bin");
}

}  // namespace vit::data
