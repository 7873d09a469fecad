// LibTorch's PyTorchStreamWriter stores records, or deflates larger code files, with
// a CRC-32 of each record's bytes in the central directory. LibTorch's reader is
// built with miniz's CRC checks turned off and trusts every record it reads; a
// damaged record can take its TorchScript importer into a segmentation fault
// (LibTorch 1.13). A file crafted with correct CRCs still reaches LibTorch's parser;
// .safetensors files are read by vit's own checked parser. The check reads each
// record once, in 1 MiB pieces.
#include "vit/weights/zip_check.hpp"

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <vector>

#include <zlib.h>

#include "vit/error.hpp"

// The zip layout (PKWARE's APPNOTE.TXT, sections 4.3 and 4.5) is read by hand:
// zlib, which vit links already, has the CRC-32 and inflate but no archive
// reader, and LibTorch's miniz is not a public API of LibTorch.
namespace vit {
namespace {

constexpr uint32_t kEndOfDirectorySignature = 0x06054b50;
constexpr uint32_t kZip64LocatorSignature = 0x07064b50;
constexpr uint32_t kZip64EndSignature = 0x06064b50;
constexpr uint32_t kDirectoryEntrySignature = 0x02014b50;
constexpr uint32_t kLocalHeaderSignature = 0x04034b50;
constexpr uint64_t kEndOfDirectoryBytes = 22;
constexpr uint64_t kMaxCommentBytes = 0xFFFF;
constexpr uint64_t kZip64LocatorBytes = 20;
constexpr uint64_t kZip64EndBytes = 56;
constexpr uint64_t kDirectoryEntryBytes = 46;
constexpr uint64_t kLocalHeaderBytes = 30;
constexpr uint16_t kZip64ExtraId = 0x0001;
constexpr uint16_t kStored = 0;
constexpr uint16_t kDeflated = 8;
constexpr uint16_t kEncryptedFlag = 0x0001;
constexpr size_t kPieceBytes = size_t{1} << 20;

// Thrown inside this file for the first problem; the public function returns it.
struct Damage {
  std::string what;
};

uint16_t u16(const uint8_t* p) {
  return static_cast<uint16_t>(p[0] | p[1] << 8);
}
uint32_t u32(const uint8_t* p) {
  return u16(p) | static_cast<uint32_t>(u16(p + 2)) << 16;
}
uint64_t u64(const uint8_t* p) {
  return u32(p) | static_cast<uint64_t>(u32(p + 4)) << 32;
}

class ArchiveFile {
 public:
  explicit ArchiveFile(const std::string& path) : in_(path, std::ios::binary) {
    if (!in_) throw Error(path + ": cannot open it for reading");
    in_.seekg(0, std::ios::end);
    const std::streamoff end = in_.tellg();
    if (end < 0) throw Error(path + ": cannot read it (not a regular file?)");
    size_ = static_cast<uint64_t>(end);
  }

  uint64_t size() const { return size_; }

  bool holds(uint64_t offset, uint64_t count) const {
    return offset <= size_ && count <= size_ - offset;
  }

  // `count` bytes at `offset`, which must lie inside the file.
  std::vector<uint8_t> read(uint64_t offset, uint64_t count, const std::string& what) {
    if (!holds(offset, count)) throw Damage{what + " lies past the end of the file (truncated?)"};
    std::vector<uint8_t> bytes(count);
    in_.seekg(static_cast<std::streamoff>(offset));
    in_.read(reinterpret_cast<char*>(bytes.data()), static_cast<std::streamsize>(count));
    if (!in_) throw Damage{"cannot read " + what};
    return bytes;
  }

 private:
  std::ifstream in_;
  uint64_t size_ = 0;
};

struct Directory {
  uint64_t offset = 0;
  uint64_t bytes = 0;
  uint64_t entries = 0;
};

struct Record {
  std::string name;
  uint16_t flags = 0;
  uint16_t method = 0;
  uint32_t crc = 0;
  uint64_t compressed = 0;
  uint64_t uncompressed = 0;
  uint64_t local_offset = 0;
};

Directory read_zip64_end(ArchiveFile& file, uint64_t locator_offset) {
  if (locator_offset < kZip64LocatorBytes) throw Damage{"its ZIP64 locator is missing"};
  const auto locator =
      file.read(locator_offset - kZip64LocatorBytes, kZip64LocatorBytes, "the ZIP64 locator");
  if (u32(locator.data()) != kZip64LocatorSignature) throw Damage{"its ZIP64 locator is missing"};
  const auto end = file.read(u64(locator.data() + 8), kZip64EndBytes,
                             "the ZIP64 end-of-central-directory record");
  if (u32(end.data()) != kZip64EndSignature)
    throw Damage{"its ZIP64 end-of-central-directory record is damaged"};
  return {u64(end.data() + 48), u64(end.data() + 40), u64(end.data() + 32)};
}

// The end-of-central-directory record is the last 22 bytes, or comes before a
// comment of up to 64 KiB; the search runs backwards from the end.
Directory find_directory(ArchiveFile& file) {
  const uint64_t tail = std::min(file.size(), kEndOfDirectoryBytes + kMaxCommentBytes);
  const auto bytes = file.read(file.size() - tail, tail, "the end of the file");
  for (uint64_t at = tail; at >= kEndOfDirectoryBytes; --at) {
    const uint8_t* p = bytes.data() + at - kEndOfDirectoryBytes;
    if (u32(p) != kEndOfDirectorySignature) continue;
    Directory directory{u32(p + 16), u32(p + 12), u16(p + 10)};
    if (directory.entries == 0xFFFF || directory.bytes == 0xFFFFFFFF ||
        directory.offset == 0xFFFFFFFF)
      directory = read_zip64_end(file, file.size() - tail + at - kEndOfDirectoryBytes);
    if (!file.holds(directory.offset, directory.bytes))
      throw Damage{"its central directory lies past the end of the file (truncated?)"};
    return directory;
  }
  throw Damage{"not a zip archive (no end-of-central-directory record; truncated?)"};
}

// A ZIP64 extra field holds, in this order, each of the three 32-bit fields
// that read 0xFFFFFFFF.
void apply_zip64_extra(const uint8_t* extra, uint64_t extra_bytes, Record& record) {
  for (uint64_t at = 0; at + 4 <= extra_bytes;) {
    const uint16_t id = u16(extra + at);
    const uint16_t bytes = u16(extra + at + 2);
    if (at + 4 + bytes > extra_bytes) break;
    if (id == kZip64ExtraId) {
      const uint8_t* field = extra + at + 4;
      uint64_t used = 0;
      for (uint64_t* value : {&record.uncompressed, &record.compressed, &record.local_offset}) {
        if (*value != 0xFFFFFFFF) continue;
        if (used + 8 > bytes) throw Damage{"record '" + record.name + "': ZIP64 field too short"};
        *value = u64(field + used);
        used += 8;
      }
      return;
    }
    at += 4 + bytes;
  }
}

std::vector<Record> read_directory(ArchiveFile& file, const Directory& directory) {
  if (directory.entries > directory.bytes / kDirectoryEntryBytes)
    throw Damage{"its central directory claims " + std::to_string(directory.entries) +
                 " records, more than its " + std::to_string(directory.bytes) + " bytes can hold"};
  const auto bytes = file.read(directory.offset, directory.bytes, "the central directory");
  std::vector<Record> records;
  records.reserve(directory.entries);
  uint64_t at = 0;
  for (uint64_t i = 0; i < directory.entries; ++i) {
    const uint8_t* p = bytes.data() + at;
    if (at + kDirectoryEntryBytes > bytes.size() || u32(p) != kDirectoryEntrySignature)
      throw Damage{"its central directory is damaged at record " + std::to_string(i)};
    const uint64_t name_bytes = u16(p + 28), extra_bytes = u16(p + 30), comment_bytes = u16(p + 32);
    const uint64_t entry_bytes = kDirectoryEntryBytes + name_bytes + extra_bytes + comment_bytes;
    if (at + entry_bytes > bytes.size())
      throw Damage{"its central directory is damaged at record " + std::to_string(i)};
    Record record;
    record.name.assign(reinterpret_cast<const char*>(p + kDirectoryEntryBytes), name_bytes);
    record.flags = u16(p + 8);
    record.method = u16(p + 10);
    record.crc = u32(p + 16);
    record.compressed = u32(p + 20);
    record.uncompressed = u32(p + 24);
    record.local_offset = u32(p + 42);
    apply_zip64_extra(p + kDirectoryEntryBytes + name_bytes, extra_bytes, record);
    records.push_back(std::move(record));
    at += entry_bytes;
  }
  return records;
}

// Where the record's bytes start: after its local header, whose name and extra
// field (PyTorch pads with one to align tensor data) may differ in length
// from the central directory's.
uint64_t data_offset(ArchiveFile& file, const Record& record) {
  const auto header =
      file.read(record.local_offset, kLocalHeaderBytes, "record '" + record.name + "'s header");
  if (u32(header.data()) != kLocalHeaderSignature)
    throw Damage{"record '" + record.name + "': its local header is damaged"};
  const uint64_t offset =
      record.local_offset + kLocalHeaderBytes + u16(header.data() + 26) + u16(header.data() + 28);
  if (!file.holds(offset, record.compressed))
    throw Damage{"record '" + record.name + "' lies past the end of the file (truncated?)"};
  return offset;
}

// Feeds the record's stored bytes, piece by piece, to `consume`.
template <typename Consume>
void for_each_piece(ArchiveFile& file, const Record& record, Consume consume) {
  const uint64_t begin = data_offset(file, record);
  for (uint64_t done = 0; done < record.compressed;) {
    const uint64_t count = std::min<uint64_t>(kPieceBytes, record.compressed - done);
    std::vector<uint8_t> piece = file.read(begin + done, count, "record '" + record.name + "'");
    consume(piece);
    done += count;
  }
}

// The CRC-32 and length of a record's uncompressed bytes.
struct Digest {
  uLong crc = 0;  // crc32()'s starting value
  uint64_t bytes = 0;
  void add(const uint8_t* data, size_t count) {
    crc = crc32(crc, data, static_cast<uInt>(count));
    bytes += count;
  }
};

Digest digest_stored(ArchiveFile& file, const Record& record) {
  Digest digest;
  for_each_piece(file, record,
                 [&](std::vector<uint8_t>& piece) { digest.add(piece.data(), piece.size()); });
  return digest;
}

// A raw deflate stream (no zlib header), as zip stores it.
class Inflater {
 public:
  Inflater() {
    if (inflateInit2(&stream_, -MAX_WBITS) != Z_OK) throw Error("zlib: cannot start inflate");
  }
  ~Inflater() { inflateEnd(&stream_); }
  Inflater(const Inflater&) = delete;
  Inflater& operator=(const Inflater&) = delete;

  bool finished() const { return status_ == Z_STREAM_END; }

  // Inflates all of `input` (or up to the stream's end) into `digest`; false
  // when the bytes are not a valid deflate stream.
  bool feed(std::vector<uint8_t>& input, Digest& digest, uint64_t max_bytes) {
    stream_.next_in = input.data();
    stream_.avail_in = static_cast<uInt>(input.size());
    while (stream_.avail_in > 0 && !finished()) {
      stream_.next_out = out_.data();
      stream_.avail_out = static_cast<uInt>(out_.size());
      status_ = inflate(&stream_, Z_NO_FLUSH);
      if (status_ == Z_BUF_ERROR) break;  // needs more input than this piece
      if (status_ != Z_OK && status_ != Z_STREAM_END) return false;
      digest.add(out_.data(), out_.size() - stream_.avail_out);
      if (digest.bytes > max_bytes) return false;
    }
    return true;
  }

 private:
  z_stream stream_{};
  int status_ = Z_OK;
  std::vector<uint8_t> out_ = std::vector<uint8_t>(kPieceBytes);
};

Digest digest_deflated(ArchiveFile& file, const Record& record) {
  Inflater inflater;
  Digest digest;
  for_each_piece(file, record, [&](std::vector<uint8_t>& piece) {
    if (!inflater.feed(piece, digest, record.uncompressed))
      throw Damage{"record '" + record.name + "': its compressed bytes are damaged"};
  });
  if (!inflater.finished())
    throw Damage{"record '" + record.name + "': its compressed bytes end early"};
  return digest;
}

void check_record(ArchiveFile& file, const Record& record) {
  const std::string name = "record '" + record.name + "'";
  if (record.flags & kEncryptedFlag) throw Damage{name + " is encrypted"};
  Digest digest;
  if (record.method == kStored) {
    if (record.compressed != record.uncompressed)
      throw Damage{name + ": stored, but its sizes differ"};
    digest = digest_stored(file, record);
  } else if (record.method == kDeflated) {
    digest = digest_deflated(file, record);
  } else {
    throw Damage{name + " uses compression method " + std::to_string(record.method) +
                 " (LibTorch writes 0 and 8)"};
  }
  if (digest.bytes != record.uncompressed)
    throw Damage{name + " holds " + std::to_string(digest.bytes) + " bytes, its header says " +
                 std::to_string(record.uncompressed)};
  if (digest.crc != record.crc) throw Damage{name + " fails its CRC-32 check (damaged)"};
}

}  // namespace

std::optional<std::string> zip_archive_problem(const std::string& path) {
  ArchiveFile file(path);
  try {
    for (const Record& record : read_directory(file, find_directory(file)))
      check_record(file, record);
  } catch (const Damage& damage) {
    return damage.what;
  }
  return std::nullopt;
}

}  // namespace vit
