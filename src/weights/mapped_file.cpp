#include "vit/weights/mapped_file.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <map>
#include <mutex>

#include <ATen/ATen.h>

namespace vit {
namespace {

// The live mappings, [begin, end) by begin: release_mapped_pages must never
// touch memory that is not a file's (MADV_DONTNEED zeroes anonymous pages).
std::mutex& mappings_mutex() {
  static std::mutex mutex;
  return mutex;
}
std::map<uintptr_t, uintptr_t>& mappings() {
  static std::map<uintptr_t, uintptr_t> ranges;
  return ranges;
}

bool inside_a_mapping(uintptr_t begin, uintptr_t end) {
  std::lock_guard<std::mutex> lock(mappings_mutex());
  auto it = mappings().upper_bound(begin);
  if (it == mappings().begin()) return false;
  --it;
  return begin >= it->first && end <= it->second;
}

}  // namespace

at::Tensor map_file(const std::string& path, uint64_t size) {
  if (size == 0) return {};
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return {};
  void* base = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
  ::close(fd);  // the mapping keeps the file
  if (base == MAP_FAILED) return {};
  const auto begin = reinterpret_cast<uintptr_t>(base);
  {
    std::lock_guard<std::mutex> lock(mappings_mutex());
    mappings()[begin] = begin + size;
  }
  return at::from_blob(
      base, {static_cast<int64_t>(size)},
      [begin, size](void*) {
        {
          std::lock_guard<std::mutex> lock(mappings_mutex());
          mappings().erase(begin);
        }
        ::munmap(reinterpret_cast<void*>(begin), size);
      },
      at::TensorOptions().dtype(at::kByte));
}

void release_mapped_pages(const at::Tensor& t) {
  if (!t.defined() || !t.is_cpu() || t.nbytes() == 0) return;
  const auto begin = reinterpret_cast<uintptr_t>(t.data_ptr());
  const uintptr_t end = begin + t.nbytes();
  if (!t.is_contiguous() || !inside_a_mapping(begin, end)) return;
  const auto page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  const uintptr_t first = (begin + page - 1) / page * page, last = end / page * page;
  if (last > first) ::madvise(reinterpret_cast<void*>(first), last - first, MADV_DONTNEED);
}

}  // namespace vit
