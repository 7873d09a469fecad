#pragma once
// How the process's heap serves LibTorch's CPU tensors.

#include <cstdint>

namespace vit {

// Blocks below this size come from the heap; larger ones from mmap(), and
// go back to the system when freed (glibc's largest threshold, HEAP_MAX on
// 64-bit). train/memory_estimate reads it too.
inline constexpr int64_t kLargestMmapThreshold = int64_t{32} << 20;

// glibc's malloc hands blocks of 128 KiB and more (a threshold that adapts
// upwards, but not far enough here) to fresh mmap()s, and unmaps them when
// they are freed. A training step frees and reallocates the same activation
// buffers every step, so each step paid for a page fault per page (measured:
// docs/benchmarks.md, "Why the own kernels"). This keeps blocks of up to 32 MiB (glibc's largest
// threshold) on the heap, and keeps up to 1 GiB of freed heap for reuse
// instead of returning it to the system after each step. Call it once, at start-up,
// before training allocates. The resident peak grows too: freed heap blocks that
// smaller requests have split stay resident (ViT-S/16 at batch 64, fp32: a
// peak of 5,900 MiB against 4,640 MiB of tensors; train/memory_estimate.hpp
// counts it).
void reuse_freed_tensor_memory();

}  // namespace vit
