// The file: "VITLIST1", the key (length, bytes padded to 8), the CRC-32 of the
// rest, then the listing: channels, side, root, name, classes, index files, and
// the train and evaluation FileLists as FileList::write lays them out.
#include "vit/data/shared_listing.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <sstream>
#include <vector>

#include <spdlog/spdlog.h>
#include <zlib.h>

#include "padded_bytes.hpp"
#include "vit/atomic_write.hpp"
#include "vit/data/download/file_lock.hpp"
#include "vit/data/image_cache.hpp"
#include "vit/error.hpp"

namespace vit::data {
namespace fs = std::filesystem;

namespace {

constexpr char kMagic[8] = {'V', 'I', 'T', 'L', 'I', 'S', 'T', '1'};

// The file mapped read-only, unmapped when the last list that views it goes.
std::shared_ptr<const void> map_whole(const fs::path& file, size_t& size) {
  const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return nullptr;
  struct stat info {};
  void* base = MAP_FAILED;
  if (::fstat(fd, &info) == 0 && info.st_size > 0)
    base = ::mmap(nullptr, size_t(info.st_size), PROT_READ, MAP_SHARED, fd, 0);
  ::close(fd);
  if (base == MAP_FAILED) return nullptr;
  size = size_t(info.st_size);
  return std::shared_ptr<const void>(
      base, [size](const void* p) { ::munmap(const_cast<void*>(p), size); });
}

int64_t mtime_ns(const fs::path& path) {
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0) return -1;
  return int64_t(info.st_mtim.tv_sec) * 1'000'000'000 + info.st_mtim.tv_nsec;
}

// Each subfolder of `dir` with its modification time, in name order.
void add_subfolder_times(std::ostream& key, const fs::path& dir, const std::string& prefix) {
  std::error_code ec;
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir, ec))
    if (entry.is_directory(ec)) names.push_back(entry.path().filename().string());
  std::sort(names.begin(), names.end());
  for (const auto& name : names)
    key << prefix << name << " " << mtime_ns(dir / name) << "\n";
}

}  // namespace

std::string image_folder_key(const fs::path& root, bool val_folder) {
  std::error_code ec;
  const fs::path absolute = fs::weakly_canonical(fs::absolute(root), ec);
  std::ostringstream key;
  key << "image-folder 1 " << absolute.string() << (val_folder ? " val-folder" : "") << "\n";
  key << ". " << mtime_ns(absolute) << "\n";
  bool split_layout = false;
  for (const char* split : {"train", "val", "test"}) {
    const fs::path dir = absolute / split;
    if (!fs::is_directory(dir, ec)) continue;
    split_layout = true;
    key << split << " " << mtime_ns(dir) << "\n";
    add_subfolder_times(key, dir, std::string(split) + "/");
  }
  if (!split_layout) add_subfolder_times(key, absolute, "");  // the class folders are the root's
  return key.str();
}

void write_listing_file(const fs::path& file, const std::string& key, const ImageListing& listing) {
  using detail::put_int, detail::put_text;
  std::ostringstream body;
  put_int(body, listing.channels);
  put_int(body, listing.side);
  put_text(body, listing.root.string());
  put_text(body, listing.name);
  put_int(body, int64_t(listing.classes.size()));
  for (const auto& name : listing.classes)
    put_text(body, name);
  put_int(body, int64_t(listing.index_files.size()));
  for (const auto& index : listing.index_files)
    put_text(body, index.string());
  listing.train.write(body);
  listing.evaluation.write(body);
  const std::string bytes = body.str();
  const auto crc =
      int64_t(::crc32_z(0L, reinterpret_cast<const Bytef*>(bytes.data()), bytes.size()));
  std::ostringstream head;
  head.write(kMagic, sizeof kMagic);  // 8 bytes: the rest stays aligned
  put_text(head, key);
  put_int(head, crc);
  write_atomically(file.string(), [&](const std::string& temp) {
    CheckedFile out(temp);
    const std::string start = head.str();
    out.write(start.data(), start.size());
    out.write(bytes.data(), bytes.size());
    out.close();
  });
}

std::optional<ImageListing> map_listing_file(const fs::path& file, const std::string& key) {
  constexpr int64_t kMostText = int64_t{1} << 20, kMostEntries = int64_t{1} << 24;
  size_t size = 0;
  const std::shared_ptr<const void> mapping = map_whole(file, size);
  if (!mapping) return std::nullopt;
  const char* begin = static_cast<const char*>(mapping.get());
  try {
    if (size < sizeof kMagic || std::memcmp(begin, kMagic, sizeof kMagic) != 0) return std::nullopt;
    const char* at = begin + sizeof kMagic;
    detail::PaddedReader in(at, begin + size, "a listing file");
    if (in.text(kMostText, "key") != key) return std::nullopt;
    const auto crc = static_cast<uLong>(in.integer(0, UINT32_MAX, "CRC-32"));
    if (::crc32_z(0L, reinterpret_cast<const Bytef*>(at), size_t(in.end() - at)) != crc)
      return std::nullopt;
    ImageListing listing;
    listing.channels = in.integer(1, 4, "channels");
    listing.side = in.integer(0, int64_t{1} << 20, "side");
    listing.root = in.text(kMostText, "root");
    listing.name = in.text(kMostText, "name");
    for (int64_t k = 0, n = in.integer(0, kMostEntries, "class count"); k < n; ++k)
      listing.classes.push_back(in.text(kMostText, "class name"));
    for (int64_t k = 0, n = in.integer(0, kMostEntries, "index file count"); k < n; ++k)
      listing.index_files.emplace_back(in.text(kMostText, "index file"));
    listing.train = FileList::mapped(at, in.end(), mapping);
    listing.evaluation = FileList::mapped(at, in.end(), mapping);
    return listing;
  } catch (const Error&) {
    return std::nullopt;  // damaged: listed again and written over
  }
}

ImageListing shared_image_folder_listing(const fs::path& root, bool val_folder,
                                         const std::string& cache_dir,
                                         const std::function<ImageListing()>& list) {
  const fs::path file = image_cache_path(root, "image-folder-list", cache_dir, /*fallback=*/true);
  std::optional<FileLock> lock;  // held until the list is written: the other ranks wait
  std::string key;
  try {
    std::error_code ec;
    fs::create_directories(file.parent_path(), ec);
    lock.emplace(file.string() + ".lock");
    key = image_folder_key(root, val_folder);
    if (auto mapped = map_listing_file(file, key)) {
      spdlog::info("the file list of {}: mapped from {}, shared by this machine's ranks",
                   root.string(), file.string());
      return std::move(*mapped);
    }
  } catch (const Error& e) {
    spdlog::warn("each rank lists {} itself: {}", root.string(), e.what());
    return list();
  }
  ImageListing listed = list();  // a bad folder's error is its own, raised once
  try {
    write_listing_file(file, key, listed);
    if (auto mapped = map_listing_file(file, key)) return std::move(*mapped);
    throw Error(file.string() + ": written, but does not map back");
  } catch (const Error& e) {
    spdlog::warn("each rank lists {} itself: {}", root.string(), e.what());
  }
  return listed;
}

}  // namespace vit::data
