#pragma once
// "auto" | "cpu" | "cuda" | "cuda:N" -> torch::Device, with clear errors.
#include <string>

#include <c10/core/Device.h>

namespace vit {

// Throws vit::Error when the text is malformed or CUDA (or device N) is absent.
c10::Device resolve_device(const std::string& spec);

// Sets LibTorch's intra-op threads; 0 = all cores. Returns the count in use.
int set_threads(int64_t requested);

// Makes CPU arithmetic treat subnormal floats as zero (all commands do).
void flush_subnormals_to_zero();

// Seeds LibTorch's CPU and CUDA generators.
void seed_everything(uint64_t seed);

}  // namespace vit
