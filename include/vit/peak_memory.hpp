#pragma once
// The peak memory of the work since the last reset, per device: what a
// training run logs at each validation (metrics.jsonl's peak_memory_mib).
#include <cstdint>
#include <optional>

#include <c10/core/Device.h>

namespace vit {

// On the CPU, the process's resident-set high-water mark (Linux's VmHWM):
// everything the process holds, the loader's buffers and the libraries
// included. On CUDA, the caching allocator's peak of allocated bytes on the
// device. nullopt where neither can be read.
std::optional<int64_t> peak_memory_bytes(c10::Device device);

// Starts a new peak from what is held now: Linux resets VmHWM to the current
// resident set (/proc/self/clear_refs), CUDA the allocator's peak statistics.
// Where that is not possible, the peak keeps counting from the start.
void reset_peak_memory(c10::Device device);

}  // namespace vit
