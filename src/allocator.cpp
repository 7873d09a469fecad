#include "vit/allocator.hpp"

#include <malloc.h>

namespace vit {

void reuse_freed_tensor_memory() {
#if defined(__GLIBC__)
  constexpr int kLargestMmapThreshold = 32 << 20;  // glibc's HEAP_MAX on 64-bit
  constexpr int kKeptFreeHeap = 1 << 30;
  mallopt(M_MMAP_THRESHOLD, kLargestMmapThreshold);
  mallopt(M_TRIM_THRESHOLD, kKeptFreeHeap);
#endif
}

}  // namespace vit
