#include "vit/device.hpp"

#include <thread>

#include <torch/torch.h>

#include "vit/build_features.hpp"
#include "vit/config.hpp"
#include "vit/error.hpp"

#if VIT_WITH_CUDA
#include <c10/cuda/CUDACachingAllocator.h>
#endif

namespace vit {

c10::Device resolve_device(const std::string& spec) {
  const bool has_cuda = torch::cuda::is_available();
  const auto choice = device_choice(spec);
  if (!choice) throw Error("--device '" + spec + "': expected auto | cpu | cuda | cuda:N");
  switch (choice->kind) {
    case DeviceChoice::Kind::kAuto:
      return has_cuda ? c10::Device(c10::kCUDA, 0) : c10::Device(c10::kCPU);
    case DeviceChoice::Kind::kCpu:
      return c10::Device(c10::kCPU);
    case DeviceChoice::Kind::kCuda:
      break;
  }
  if (!has_cuda)
    throw Error(
        "--device " + spec +
        ": CUDA is not available (this LibTorch build or machine has no GPU); use --device cpu");
  const auto count = static_cast<int>(torch::cuda::device_count());
  if (choice->index >= count)
    throw Error("--device " + spec + ": there is no CUDA device " + std::to_string(choice->index) +
                " (found " + std::to_string(count) + ")");
  return c10::Device(c10::kCUDA, static_cast<c10::DeviceIndex>(choice->index));
}

std::string device_spec(const std::string& flag, const std::string& configured) {
  return is_auto_device(flag) ? configured : flag;
}

bool is_auto_device(const std::string& spec) {
  const auto choice = device_choice(spec);
  return choice && choice->kind == DeviceChoice::Kind::kAuto;
}

int set_threads(int64_t requested) {
  if (requested < 0)
    throw Error("--threads " + std::to_string(requested) + ": expected >= 0 (0 = all cores)");
  // Debian's LibTorch starts with one thread; say how many we want.
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const int threads = requested == 0 ? cores : static_cast<int>(requested);
  torch::set_num_threads(threads);
  return threads;
}

void flush_subnormals_to_zero() {
  // AdamW's second moments of small gradients can fall below 1e-38, where x86
  // handles each operation in microcode at many times the cost. Flushing them
  // to zero changes no result that matters. It guards long runs against that
  // slowdown; on short benchmarks it is lost in the noise (docs/benchmarks.md,
  // "Why the own kernels").
  at::globalContext().setFlushDenormal(true);
}

void seed_everything(uint64_t seed) {
  torch::manual_seed(seed);
  if (torch::cuda::is_available()) torch::cuda::manual_seed_all(seed);
}

std::optional<int64_t> peak_gpu_memory_bytes(c10::Device device) {
#if VIT_WITH_CUDA
  if (!device.is_cuda()) return std::nullopt;
  const auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(device.index());
  return stats.allocated_bytes[0].peak;  // [0]: every pool (StatType::AGGREGATE)
#else
  (void)device;
  return std::nullopt;
#endif
}

// To a GPU the copy goes through pinned memory and does not wait for it, so the
// host never blocks on the GPU's queue (a plain copy from pageable memory does); the
// pinned buffer stays alive until the copy has run.
at::Tensor to_device(const at::Tensor& host, c10::Device device) {
  if (!device.is_cuda()) return host.to(device);
  return host.pin_memory().to(device, /*non_blocking=*/true);
}

}  // namespace vit
