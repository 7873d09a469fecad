#pragma once
// The image files of a dataset and their labels, held compactly enough for
// ImageNet-21k's 14 million files in a few hundred MB: folders stored once, names
// front-coded, labels in the narrowest integer that holds the class count. A
// FileList only grows, and growing never copies what it holds. The splits of a
// dataset are views over one shared list (StreamedSplit::rows), never copies.
#include <cstdint>
#include <deque>
#include <filesystem>
#include <iosfwd>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace vit::data {

class FileList {
 public:
  // `num_classes` sizes a label: one byte up to 256 classes, two up to 65,536, else four.
  explicit FileList(int64_t num_classes = 256);

  // `label` in [0, num_classes). Consecutive files of one folder share its entry.
  void add(const std::filesystem::path& folder, std::string_view name, int64_t label);

  int64_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  int64_t num_classes() const { return num_classes_; }
  std::filesystem::path path(int64_t i) const;
  std::string name(int64_t i) const;
  const std::string& folder(int64_t i) const;
  int64_t label(int64_t i) const;
  // Every path, in order: for the in-memory path, whose datasets are small.
  std::vector<std::filesystem::path> paths() const;
  std::vector<int64_t> labels() const;
  // The heap bytes the list holds, its containers' blocks included (a mapped list's
  // names, offsets and labels are not on the heap).
  int64_t bytes() const;

  // The list as bytes (native byte order, 8-byte aligned parts), for a file that
  // mapped() reads back.
  void write(std::ostream& out) const;
  // The list written at `cursor` (moved past it), whose names, offsets and labels
  // stay where they are: a view of memory that `owner` keeps mapped. Throws
  // vit::Error when the bytes end early or do not add up.
  static FileList mapped(const char*& cursor, const char* end, std::shared_ptr<const void> owner);
  bool is_mapped() const { return mapped_names_ != nullptr; }

 private:
  void check_index(int64_t i) const;
  void encode_name(std::string_view name);
  void store_label(int64_t label);

  int64_t num_classes_;
  int label_width_;  // bytes per label: 1, 2 or 4
  int64_t size_ = 0;
  std::vector<std::string> folders_;   // each folder's path
  std::vector<int64_t> folder_first_;  // the index of each folder's first file
  std::deque<char> names_;             // the front-coded names
  std::deque<uint64_t> block_offset_;  // where every 16th name starts in names_
  std::deque<uint8_t> labels_;         // label_width_ bytes a file, little-endian
  std::string last_name_;              // the name added last, to code the next against
  // A mapped list reads these instead of the three deques, and cannot grow.
  std::shared_ptr<const void> owner_;  // keeps them mapped
  const char* mapped_names_ = nullptr;
  const uint64_t* mapped_offsets_ = nullptr;
  const uint8_t* mapped_labels_ = nullptr;
};

}  // namespace vit::data
