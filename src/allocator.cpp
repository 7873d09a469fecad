#include "vit/allocator.hpp"

#include <malloc.h>

namespace vit {

void reuse_freed_tensor_memory() {
#if defined(__GLIBC__)
  constexpr int kKeptFreeHeap = 1 << 30;
  mallopt(M_MMAP_THRESHOLD, static_cast<int>(kLargestMmapThreshold));
  mallopt(M_TRIM_THRESHOLD, kKeptFreeHeap);
#endif
}

}  // namespace vit
