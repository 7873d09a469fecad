#pragma once
// An exclusive lock on a file (flock), so two processes (torchrun's ranks, or
// two runs) never download into the same place at once; the second waits.
#include <filesystem>

namespace vit::data {

class FileLock {
 public:
  // Waits for the lock; a vit::Error names a file that cannot be created.
  explicit FileLock(const std::filesystem::path& file);
  ~FileLock();  // closing the file releases the lock
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;

 private:
  int fd_ = -1;
};

}  // namespace vit::data
