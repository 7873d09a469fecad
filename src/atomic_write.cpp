#include "vit/atomic_write.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>
#include <utility>

#include "vit/error.hpp"

namespace vit {
namespace fs = std::filesystem;

namespace {

std::string errno_text() {
  return std::strerror(errno);
}

// Forces a written file's data to the disk, so that the rename that follows
// can never expose an empty or partial file after a power loss.
void sync_file(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw Error("cannot reopen " + path + " (" + errno_text() + ")");
  const int rc = ::fsync(fd);
  const std::string error = rc != 0 ? errno_text() : "";
  ::close(fd);
  if (rc != 0) throw Error("cannot flush " + path + " to disk (" + error + ")");
}

// Best effort: makes the rename itself durable.
void sync_folder(const fs::path& folder) {
  const int fd = ::open(folder.empty() ? "." : folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  ::fsync(fd);
  ::close(fd);
}

// A name beside `path` that no other call, thread or process uses.
std::string temporary_beside(const std::string& path) {
  static std::atomic<uint64_t> calls{0};
  return path + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(calls++);
}

}  // namespace

CheckedFile::CheckedFile(std::string path, Mode mode) : path_(std::move(path)) {
  const int where = mode == Mode::kAppend ? O_APPEND : O_TRUNC;
  fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | where | O_CLOEXEC, 0644);
  if (fd_ < 0) throw Error("cannot open " + path_ + " for writing (" + errno_text() + ")");
}

CheckedFile::~CheckedFile() {
  if (fd_ >= 0) ::close(fd_);  // only after an error: close() reports its own
}

void CheckedFile::write(const void* data, size_t size) {
  const auto* bytes = static_cast<const char*>(data);
  size_t written = 0;
  while (written < size) {
    const ssize_t n = ::write(fd_, bytes + written, size - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0)
      throw Error("cannot write " + path_ + " (" + (n < 0 ? errno_text() : "no progress") + ")");
    written += static_cast<size_t>(n);
  }
}

void CheckedFile::close() {
  const int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) throw Error("cannot write " + path_ + " (" + errno_text() + ")");
}

void write_bytes(const std::string& path, const void* data, size_t size) {
  CheckedFile file(path);
  file.write(data, size);
  file.close();
}

// The temporary file's name is unique to the process and the call; on failure it is
// removed.
void write_atomically(const std::string& path,
                      const std::function<void(const std::string&)>& write) {
  const fs::path target(path);
  if (target.has_parent_path()) {
    std::error_code ec;
    fs::create_directories(target.parent_path(), ec);
    if (ec)
      throw Error(path + ": cannot create folder " + target.parent_path().string() + " (" +
                  ec.message() + ")");
  }
  const std::string temp = temporary_beside(path);
  const auto discard = [&] {
    std::error_code ignored;
    fs::remove(temp, ignored);
  };
  try {
    write(temp);
    sync_file(temp);
  } catch (const std::exception& e) {
    discard();
    const std::string what = e.what();
    throw Error(path + ": write failed (" + what.substr(0, what.find('\n')) + ")");
  }
  std::error_code ec;
  fs::rename(temp, target, ec);
  if (ec) {
    discard();
    throw Error(path + ": cannot replace file (" + ec.message() + ")");
  }
  sync_folder(target.parent_path());
}

void write_text_atomically(const std::string& path, const std::string& text) {
  write_atomically(path,
                   [&](const std::string& temp) { write_bytes(temp, text.data(), text.size()); });
}

void link_atomically(const std::string& link, const std::string& target) {
  const std::string temp = temporary_beside(link);
  std::error_code ec;
  fs::create_directory_symlink(target, temp, ec);
  if (!ec) fs::rename(temp, link, ec);  // rename(2) replaces the old link in one step
  if (ec) {
    std::error_code ignored;
    fs::remove(temp, ignored);
    throw Error(link + ": cannot point at " + target + " (" + ec.message() + ")");
  }
  sync_folder(fs::path(link).parent_path());
}

void move_into_place(const std::string& from, const std::string& to) {
  std::error_code ec;
  fs::rename(from, to, ec);  // rename(2) replaces an empty folder, never a full one
  if (ec) throw Error("cannot move " + from + " to " + to + " (" + ec.message() + ")");
  sync_folder(fs::path(to).parent_path());
}

}  // namespace vit
