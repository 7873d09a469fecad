#pragma once
// "auto" | "cpu" | "cuda" | "cuda:N" -> torch::Device, with clear errors.
#include <cstdint>
#include <optional>
#include <string>

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

namespace vit {

// Throws vit::Error when the text is malformed or CUDA (or device N) is absent.
c10::Device resolve_device(const std::string& spec);

// The device a command asks for: the --device flag, unless it was left at
// auto, then the config's `device`.
std::string device_spec(const std::string& flag, const std::string& configured);

// Whether a spec leaves the choice to vit (auto).
bool is_auto_device(const std::string& spec);

// Sets LibTorch's intra-op threads; 0 = all cores. Returns the count in use.
int set_threads(int64_t requested);

// Makes CPU arithmetic treat subnormal floats as zero (all commands do).
void flush_subnormals_to_zero();

// Seeds LibTorch's CPU and CUDA generators.
void seed_everything(uint64_t seed);

// The most memory LibTorch's CUDA allocator has handed out for tensors on
// `device` since the process started, in bytes (torch.cuda.max_memory_allocated);
// nullopt for the CPU or in a build without CUDA.
std::optional<int64_t> peak_gpu_memory_bytes(c10::Device device);

// `host` (a CPU tensor) on `device`. To a GPU the copy goes through pinned
// memory and does not wait for it, so the host never blocks on the GPU's queue
// (a plain copy from pageable memory does); the pinned buffer stays alive
// until the copy has run. On the CPU, `host` itself, as Tensor::to returns it.
at::Tensor to_device(const at::Tensor& host, c10::Device device);

}  // namespace vit
