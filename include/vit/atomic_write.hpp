#pragma once
// Write-then-rename, so a crash or a full disk never leaves a damaged file where a
// good one is expected; every writer of a file a user or a later run reads uses it.
#include <cstddef>
#include <functional>
#include <string>

namespace vit {

// Calls write(temp_path) for a unique temporary file next to `path`, flushes it to
// disk, renames it over `path` and flushes the folder (created if needed). If write
// throws or the rename fails, `path` is left as it was and a vit::Error names it.
void write_atomically(const std::string& path,
                      const std::function<void(const std::string&)>& write);

// A file whose every write and close are checked: a full disk is a vit::Error naming
// the file and errno's reason, never a silent loss.
class CheckedFile {
 public:
  enum class Mode { kTruncate, kAppend };
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

// Not atomically, through a CheckedFile.
void write_bytes(const std::string& path, const void* data, size_t size);

void write_text_atomically(const std::string& path, const std::string& text);

// Points the symbolic link `link` at `target` (stored as given) in one step; a
// vit::Error names the link.
void link_atomically(const std::string& link, const std::string& target);

// Moves a finished file or folder to `to` in one step, on one file system. A file
// replaces a file, a folder only an empty folder; else a vit::Error names both and
// `from` stays where it was.
void move_into_place(const std::string& from, const std::string& to);

}  // namespace vit
