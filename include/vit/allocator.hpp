#pragma once
// How the process's heap serves LibTorch's CPU tensors.

namespace vit {

// glibc's malloc hands blocks of 128 KiB and more (a threshold that adapts
// upwards, but not far enough here) to fresh mmap()s, and unmaps them when
// they are freed. A training step frees and reallocates the same activation
// buffers every step, so each step paid for a page fault per page (measured:
// docs/benchmarks.md, "Why the own kernels"). This keeps blocks of up to 32 MiB (glibc's largest
// threshold) on the heap, and keeps up to 1 GiB of freed heap for reuse
// instead of returning it to the system after each step. Call it once, at start-up,
// before training allocates. Peak memory grows by about the largest step's working set.
void reuse_freed_tensor_memory();

}  // namespace vit
