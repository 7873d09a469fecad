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

// The --device flag, unless it was left at auto, then the config's `device`.
std::string device_spec(const std::string& flag, const std::string& configured);

bool is_auto_device(const std::string& spec);

// LibTorch's intra-op threads; 0 = all cores. Returns the count in use.
int set_threads(int64_t requested);

void flush_subnormals_to_zero();  // on the CPU (all commands do)

void seed_everything(uint64_t seed);  // LibTorch's CPU and CUDA generators

// torch.cuda.max_memory_allocated on `device` since the process started, in bytes;
// nullopt for the CPU or in a build without CUDA.
std::optional<int64_t> peak_gpu_memory_bytes(c10::Device device);

// `host` (a CPU tensor) on `device`, without waiting for a GPU; on the CPU, `host`
// itself.
at::Tensor to_device(const at::Tensor& host, c10::Device device);

}  // namespace vit
