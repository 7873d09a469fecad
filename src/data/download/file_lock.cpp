#include "vit/data/download/file_lock.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <system_error>

#include <spdlog/spdlog.h>

#include "vit/error.hpp"

namespace vit::data {

FileLock::FileLock(const std::filesystem::path& file) {
  std::error_code ec;
  std::filesystem::create_directories(file.parent_path(), ec);
  fd_ = ::open(file.c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0644);
  if (fd_ < 0) throw Error("cannot create " + file.string() + " (" + std::strerror(errno) + ")");
  if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    spdlog::info("waiting for another process that downloads the same files ({})", file.string());
    ::flock(fd_, LOCK_EX);
  }
}

FileLock::~FileLock() {
  ::close(fd_);
}

}  // namespace vit::data
