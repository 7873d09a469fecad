// Each folder's path is stored once, and the file names, in listing order, are
// front-coded: each keeps only what differs from the name before it; every 16th is
// whole, so a name is decoded from at most 16 entries. ImageNet's names
// ("n01440764_10026.JPEG") take about 8 bytes each this way instead of the ~100 of
// a std::filesystem::path. The names, offsets and labels live in std::deques
// (512-byte blocks), so a listing's peak is the list itself, not the 3x of a
// doubling vector.
#include "vit/data/file_list.hpp"

#include <algorithm>
#include <ostream>

#include "padded_bytes.hpp"
#include "vit/error.hpp"

namespace vit::data {

namespace {

constexpr int64_t kBlock = 16;  // names a whole name starts; the most a lookup decodes

int label_width(int64_t num_classes) {
  if (num_classes <= 256) return 1;
  if (num_classes <= 65536) return 2;
  return 4;
}

// LEB128: 7 bits a byte, low first; names are under 128 bytes almost always.
void put_varint(std::deque<char>& out, size_t value) {
  while (value >= 0x80) {
    out.push_back(static_cast<char>((value & 0x7F) | 0x80));
    value >>= 7;
  }
  out.push_back(static_cast<char>(value));
}

// `in`: the deque of a growing list, or a mapped list's bytes.
template <typename Bytes>
size_t get_varint(const Bytes& in, size_t& pos) {
  size_t value = 0;
  for (int shift = 0;; shift += 7) {
    const auto byte = static_cast<uint8_t>(in[pos++]);
    value |= static_cast<size_t>(byte & 0x7F) << shift;
    if (byte < 0x80) return value;
  }
}

size_t shared_prefix(std::string_view a, std::string_view b) {
  const auto end = std::mismatch(a.begin(), a.begin() + std::min(a.size(), b.size()), b.begin());
  return static_cast<size_t>(end.first - a.begin());
}

template <typename T>
int64_t capacity_bytes(const std::vector<T>& v) {
  return static_cast<int64_t>(v.capacity() * sizeof(T));
}

// A deque's blocks (libstdc++: 512 bytes each, with malloc's 16-byte header)
// and its map's pointer to each.
template <typename T>
int64_t deque_bytes(const std::deque<T>& d) {
  constexpr int64_t kBlockBytes = 512, kMallocHeader = 16;
  constexpr int64_t per_block = std::max<int64_t>(1, kBlockBytes / int64_t(sizeof(T)));
  const int64_t blocks = int64_t(d.size()) / per_block + 1;
  return blocks * (kBlockBytes + kMallocHeader + int64_t(sizeof(void*)));
}

// Where byte `pos` of the names is, as an iterator `std::string::append` takes.
std::deque<char>::const_iterator byte_at(const std::deque<char>& names, size_t pos) {
  return names.begin() + static_cast<std::ptrdiff_t>(pos);
}
const char* byte_at(const char* names, size_t pos) {
  return names + pos;
}

// Name i from the front-coded `names`, starting at its block's whole name.
template <typename Bytes>
std::string decode_name(const Bytes& names, size_t pos, int64_t i) {
  std::string name;
  for (int64_t k = i - i % kBlock; k <= i; ++k) {
    const size_t shared = get_varint(names, pos);
    const size_t rest = get_varint(names, pos);
    name.resize(shared);
    name.append(byte_at(names, pos), byte_at(names, pos + rest));
    pos += rest;
  }
  return name;
}

}  // namespace

FileList::FileList(int64_t num_classes)
    : num_classes_(num_classes), label_width_(label_width(num_classes)) {
  if (num_classes < 1) throw Error("a file list needs at least one class");
}

void FileList::add(const std::filesystem::path& folder, std::string_view name, int64_t label) {
  if (is_mapped()) throw Error("a mapped file list cannot grow");
  if (label < 0 || label >= num_classes_)
    throw Error((folder / std::string(name)).string() + ": label " + std::to_string(label) +
                " outside [0, " + std::to_string(num_classes_) + ")");
  if (folders_.empty() || folders_.back() != folder.native()) {
    folders_.push_back(folder.native());
    folder_first_.push_back(size_);
  }
  encode_name(name);
  store_label(label);
  ++size_;
}

void FileList::encode_name(std::string_view name) {
  const bool whole = size_ % kBlock == 0;
  if (whole) block_offset_.push_back(names_.size());
  const size_t shared = whole ? 0 : shared_prefix(last_name_, name);
  put_varint(names_, shared);
  put_varint(names_, name.size() - shared);
  names_.insert(names_.end(), name.begin() + static_cast<std::ptrdiff_t>(shared), name.end());
  last_name_.assign(name);
}

void FileList::store_label(int64_t label) {
  for (int b = 0; b < label_width_; ++b)
    labels_.push_back(static_cast<uint8_t>((static_cast<uint64_t>(label) >> (8 * b)) & 0xFF));
}

void FileList::check_index(int64_t i) const {
  if (i < 0 || i >= size_)
    throw Error("file " + std::to_string(i) + " of a list of " + std::to_string(size_));
}

std::string FileList::name(int64_t i) const {
  check_index(i);
  const auto block = static_cast<size_t>(i / kBlock);
  return is_mapped() ? decode_name(mapped_names_, mapped_offsets_[block], i)
                     : decode_name(names_, block_offset_[block], i);
}

const std::string& FileList::folder(int64_t i) const {
  check_index(i);
  const auto after = std::upper_bound(folder_first_.begin(), folder_first_.end(), i);
  return folders_[static_cast<size_t>(after - folder_first_.begin() - 1)];
}

std::filesystem::path FileList::path(int64_t i) const {
  return std::filesystem::path(folder(i)) / name(i);
}

int64_t FileList::label(int64_t i) const {
  check_index(i);
  uint64_t label = 0;
  const size_t at = static_cast<size_t>(i) * static_cast<size_t>(label_width_);
  for (int b = 0; b < label_width_; ++b)
    label |= uint64_t{is_mapped() ? mapped_labels_[at + b] : labels_[at + b]} << (8 * b);
  return static_cast<int64_t>(label);
}

std::vector<std::filesystem::path> FileList::paths() const {
  std::vector<std::filesystem::path> out;
  out.reserve(static_cast<size_t>(size_));
  for (int64_t i = 0; i < size_; ++i)
    out.push_back(path(i));
  return out;
}

std::vector<int64_t> FileList::labels() const {
  std::vector<int64_t> out;
  out.reserve(static_cast<size_t>(size_));
  for (int64_t i = 0; i < size_; ++i)
    out.push_back(label(i));
  return out;
}

int64_t FileList::bytes() const {
  int64_t folder_bytes = capacity_bytes(folders_);
  for (const auto& f : folders_)
    folder_bytes += static_cast<int64_t>(f.capacity());
  return folder_bytes + capacity_bytes(folder_first_) + deque_bytes(names_) +
         deque_bytes(block_offset_) + deque_bytes(labels_) +
         static_cast<int64_t>(last_name_.capacity());
}

void FileList::write(std::ostream& out) const {
  using detail::put_int, detail::put_padded;
  if (is_mapped()) throw Error("a mapped file list is written already");
  put_int(out, num_classes_);
  put_int(out, size_);
  put_int(out, int64_t(folders_.size()));
  for (size_t f = 0; f < folders_.size(); ++f) {
    put_int(out, folder_first_[f]);
    put_int(out, int64_t(folders_[f].size()));
    put_padded(out, folders_[f]);
  }
  put_int(out, int64_t(names_.size()));
  for (const uint64_t offset : block_offset_)
    put_int(out, int64_t(offset));
  put_padded(out, labels_);
  put_padded(out, names_);
}

FileList FileList::mapped(const char*& at, const char* end, std::shared_ptr<const void> owner) {
  detail::PaddedReader in(at, end, "a file list");
  constexpr int64_t kMost = int64_t{1} << 40;
  FileList list(in.integer(1, kMost, "class count"));
  const int64_t size = in.integer(0, kMost, "size");
  const int64_t folders = in.integer(0, size, "folder count");
  for (int64_t f = 0; f < folders; ++f) {
    const int64_t first =
        in.integer(f == 0 ? 0 : list.folder_first_.back() + 1, size - 1, "folder's first file");
    const auto length = static_cast<size_t>(in.integer(0, 1 << 20, "folder's length"));
    list.folders_.emplace_back(in.bytes(length), length);
    list.folder_first_.push_back(first);
  }
  if ((size > 0) != (folders > 0) || (folders > 0 && list.folder_first_.front() != 0))
    throw Error("a file list's folders do not cover its files");
  const auto names = static_cast<size_t>(in.integer(0, kMost, "names' length"));
  const auto blocks = static_cast<size_t>((size + kBlock - 1) / kBlock);
  list.mapped_offsets_ = reinterpret_cast<const uint64_t*>(in.bytes(blocks * sizeof(uint64_t)));
  for (size_t b = 0; b < blocks; ++b)
    if (list.mapped_offsets_[b] >= names)
      throw Error("a file list's name offset is past its names");
  list.mapped_labels_ =
      reinterpret_cast<const uint8_t*>(in.bytes(size_t(size) * size_t(list.label_width_)));
  list.mapped_names_ = in.bytes(names);
  list.size_ = size;
  list.owner_ = std::move(owner);
  return list;
}

}  // namespace vit::data
