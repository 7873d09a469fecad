#include "vit/data/folder_listing.hpp"

#include <dirent.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>

#include <spdlog/spdlog.h>

#include "vit/error.hpp"

namespace vit::data {
namespace fs = std::filesystem;

namespace {

constexpr int64_t kDefaultThreads = 8;
constexpr auto kProgressEvery = std::chrono::seconds(2);

bool has_extension(std::string_view name, const std::vector<std::string>& extensions) {
  const size_t dot = name.rfind('.');
  if (dot == std::string_view::npos) return false;
  std::string ext(name.substr(dot));
  std::transform(ext.begin(), ext.end(), ext.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return std::find(extensions.begin(), extensions.end(), ext) != extensions.end();
}

// The entry's type from readdir where the filesystem gives it, else from a
// stat that follows links.
bool is_regular(const fs::path& dir, const dirent& entry) {
  if (entry.d_type == DT_REG) return true;
  if (entry.d_type != DT_UNKNOWN && entry.d_type != DT_LNK) return false;
  std::error_code ec;
  return fs::is_regular_file(dir / entry.d_name, ec);
}

std::string listing_error(const fs::path& dir, int error) {
  if (error == ENOENT || error == ENOTDIR) return dir.string() + ": folder not found";
  return dir.string() + ": cannot list the folder (" + std::strerror(error) + ")";
}

// One folder's names as a worker left them for the listing thread.
struct FolderResult {
  std::vector<std::string> names;
  std::exception_ptr error;
  bool done = false;
};

}  // namespace

// opendir/readdir rather than std::filesystem::directory_iterator: no path
// object per entry, and the type comes with the entry, so a 1.28M-file
// listing makes no stat call and no allocation beyond the names it keeps.
std::vector<std::string> image_names(const fs::path& dir,
                                     const std::vector<std::string>& extensions) {
  const std::unique_ptr<DIR, int (*)(DIR*)> handle(::opendir(dir.c_str()), ::closedir);
  if (!handle) throw Error(listing_error(dir, errno));
  std::vector<std::string> names;
  for (;;) {
    errno = 0;
    const dirent* entry = ::readdir(handle.get());
    if (entry == nullptr) break;
    if (has_extension(entry->d_name, extensions) && is_regular(dir, *entry))
      names.emplace_back(entry->d_name);
  }
  if (errno != 0) throw Error(listing_error(dir, errno));
  std::sort(names.begin(), names.end());
  return names;
}

FileList list_labelled_folders(const std::vector<LabelledFolder>& folders,
                               const std::vector<std::string>& extensions, int64_t num_classes,
                               int64_t threads) {
  const size_t n = folders.size();
  FileList out(num_classes);
  if (n == 0) return out;
  const size_t workers = std::min(n, static_cast<size_t>(threads > 0 ? threads : kDefaultThreads));
  // Workers run at most this many folders ahead of the one being added, so
  // the names waiting in memory stay a few folders' worth.
  const size_t window = 4 * workers;
  std::vector<FolderResult> results(n);
  std::mutex mutex;
  std::condition_variable changed;
  size_t next = 0, added = 0;
  bool stop = false;

  const auto work = [&] {
    for (;;) {
      size_t k = 0;
      {
        std::unique_lock lock(mutex);
        changed.wait(lock, [&] { return stop || next >= n || next < added + window; });
        if (stop || next >= n) return;
        k = next++;
      }
      FolderResult result;
      try {
        result.names = image_names(folders[k].dir, extensions);
      } catch (...) {
        result.error = std::current_exception();
      }
      result.done = true;
      {
        std::lock_guard lock(mutex);
        results[k] = std::move(result);
      }
      changed.notify_all();
    }
  };
  std::vector<std::thread> pool;
  const auto stop_pool = [&] {
    {
      std::lock_guard lock(mutex);
      stop = true;
    }
    changed.notify_all();
    for (auto& t : pool)
      t.join();
  };
  for (size_t w = 0; w < workers; ++w)
    pool.emplace_back(work);

  const auto start = std::chrono::steady_clock::now();
  auto report_at = start + kProgressEvery;
  const auto report = [&](size_t k) {
    if (std::chrono::steady_clock::now() < report_at) return;
    spdlog::info("listing {}: {} of {} folders, {} images so far",
                 folders[0].dir.parent_path().string(), k, n, out.size());
    report_at += kProgressEvery;
  };
  try {
    for (size_t k = 0; k < n; ++k) {
      std::vector<std::string> names;
      {
        std::unique_lock lock(mutex);
        while (!results[k].done) {
          changed.wait_until(lock, report_at);
          report(k);
        }
        if (results[k].error) std::rethrow_exception(results[k].error);
        names = std::move(results[k].names);
        added = k + 1;
      }
      changed.notify_all();
      for (const auto& name : names)
        out.add(folders[k].dir, name, folders[k].label);
      report(k + 1);
    }
  } catch (...) {
    stop_pool();
    throw;
  }
  stop_pool();
  return out;
}

}  // namespace vit::data
