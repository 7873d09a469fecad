#pragma once
// How the process's heap serves LibTorch's CPU tensors.

namespace vit {

// glibc's malloc hands blocks of 128 KiB and more (a threshold that adapts
// upwards, but not far enough here) to fresh mmap()s, and unmaps them when
// they are freed. A training step frees and reallocates the same activation
// buffers every step, so each step paid for millions of page faults: an fp32
// epoch of the CPU benchmark job took 5.4 M minor faults, against 0.33 M with
// this setting and 0.72 M for the same job in PyTorch, and trained 15% faster
// (docs/benchmarks-history.md). This keeps blocks of up to 32 MiB (glibc's largest
// threshold) on the heap, and keeps up to 1 GiB of freed heap for reuse
// instead of returning it to the system after each step. Call it once, at start-up,
// before training allocates. Peak memory grows by about the largest step's working set
// (+6% on that job), still below PyTorch's.
void reuse_freed_tensor_memory();

}  // namespace vit
