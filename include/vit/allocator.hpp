#pragma once
// How the process's heap serves LibTorch's CPU tensors.

#include <cstdint>

namespace vit {

// Blocks below this size come from the heap; larger ones from mmap(), returned when
// freed (glibc's largest threshold). train/memory_estimate reads it too.
inline constexpr int64_t kLargestMmapThreshold = int64_t{32} << 20;

// Keeps blocks of up to kLargestMmapThreshold on the heap, and up to 1 GiB of freed
// heap for reuse, so that a training step's activation buffers do not page-fault
// afresh every step. Call it once, at start-up, before training allocates. The
// resident peak grows: freed heap blocks that smaller requests have split stay
// resident (train/memory_estimate.hpp counts it).
void reuse_freed_tensor_memory();

}  // namespace vit
