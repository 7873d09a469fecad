// Each folder's path is stored once, and the file names, in listing order, are
// front-coded: each keeps only what differs from the name before it; every 16th is
// whole, so a name is decoded from at most 16 entries. ImageNet's names
// ("n01440764_10026.JPEG") take about 8 bytes each this way instead of the ~100 of
// a std::filesystem::path. The names, offsets and labels live in std::deques
// (512-byte blocks), so a listing's peak is the list itself, not the 3x of a
// doubling vector.
#include "vit/data/file_list.hpp"

#include <algorithm>

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

size_t get_varint(const std::deque<char>& in, size_t& pos) {
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

}  // namespace

FileList::FileList(int64_t num_classes)
    : num_classes_(num_classes), label_width_(label_width(num_classes)) {
  if (num_classes < 1) throw Error("a file list needs at least one class");
}

void FileList::add(const std::filesystem::path& folder, std::string_view name, int64_t label) {
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
  size_t pos = block_offset_[static_cast<size_t>(i / kBlock)];
  std::string name;
  for (int64_t k = i - i % kBlock; k <= i; ++k) {
    const size_t shared = get_varint(names_, pos);
    const size_t rest = get_varint(names_, pos);
    name.resize(shared);
    const auto from = names_.begin() + static_cast<std::ptrdiff_t>(pos);
    name.append(from, from + static_cast<std::ptrdiff_t>(rest));
    pos += rest;
  }
  return name;
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
    label |= uint64_t{labels_[at + b]} << (8 * b);
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

}  // namespace vit::data
