#pragma once
// Write-then-rename, so a crash or a full disk never leaves a damaged file
// where a good one is expected. The one place that renames into place: every
// writer of a file that a user or a later run reads goes through it.
#include <cstddef>
#include <functional>
#include <string>

namespace vit {

// Calls write(temp_path) for a temporary file next to `path` (its name unique
// to the process and the call), flushes it to the disk, renames it over
// `path` and flushes the folder, creating the folder first if needed. If
// write throws or the rename fails, the temporary file is removed, `path` is
// left as it was, and a vit::Error names the path.
void write_atomically(const std::string& path,
                      const std::function<void(const std::string&)>& write);

// A file opened for writing whose every write and its close are checked, so a
// full disk is a vit::Error naming the file and errno's reason, never a
// silent loss.
class CheckedFile {
 public:
  enum class Mode { kTruncate, kAppend };
  // Creates the file, or truncates it (kTruncate) or writes at its end (kAppend).
  explicit CheckedFile(std::string path, Mode mode = Mode::kTruncate);
  ~CheckedFile();
  CheckedFile(const CheckedFile&) = delete;
  CheckedFile& operator=(const CheckedFile&) = delete;

  void write(const void* data, size_t size);
  void close();

 private:
  std::string path_;
  int fd_ = -1;
};

// Writes `size` bytes to `path` (not atomically) through a CheckedFile.
void write_bytes(const std::string& path, const void* data, size_t size);

// Writes `text` to `path` atomically.
void write_text_atomically(const std::string& path, const std::string& text);

// Points the symbolic link `link` at `target` (stored as given) in one step:
// a new link beside it, renamed over the old one. A vit::Error names the link.
void link_atomically(const std::string& link, const std::string& target);

// Moves a finished file or folder `from` to `to` in one step (both on one
// file system, e.g. a folder unpacked beside its destination). A file
// replaces a file; a folder replaces only an empty folder. A vit::Error names
// both otherwise, and `from` stays where it was.
void move_into_place(const std::string& from, const std::string& to);

}  // namespace vit
