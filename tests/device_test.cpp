#include "vit/device.hpp"

#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "error_of.hpp"
#include "vit/error.hpp"

namespace vit {
namespace {

using testing::error_of;

TEST(Device, CpuAndAutoResolve) {
  EXPECT_EQ(resolve_device("cpu"), c10::Device(c10::kCPU));
  EXPECT_EQ(resolve_device("auto"),
            torch::cuda::is_available() ? c10::Device(c10::kCUDA, 0) : c10::Device(c10::kCPU));
}

TEST(Device, MalformedNamesAreRejected) {
  EXPECT_EQ(error_of([] { resolve_device("gpu"); }),
            "--device 'gpu': expected auto | cpu | cuda | cuda:N");
  EXPECT_EQ(error_of([] { resolve_device("cuda:x"); }),
            "--device 'cuda:x': expected auto | cpu | cuda | cuda:N");
  EXPECT_EQ(error_of([] { resolve_device("cuda:"); }),
            "--device 'cuda:': expected auto | cpu | cuda | cuda:N");
  EXPECT_EQ(error_of([] { resolve_device(""); }),
            "--device '': expected auto | cpu | cuda | cuda:N");
}

// Asking for CUDA where there is none is one line that says what to do, not a
// crash inside LibTorch.
TEST(Device, CudaWithoutAGpuIsOneLine) {
  if (torch::cuda::is_available()) GTEST_SKIP() << "CUDA is available here";
  for (const std::string spec : {"cuda", "cuda:1"}) {
    const std::string error = error_of([&] { resolve_device(spec); });
    EXPECT_EQ(error, "--device " + spec +
                         ": CUDA is not available (this LibTorch build or machine has no GPU); "
                         "use --device cpu");
    EXPECT_EQ(error.find('\n'), std::string::npos);
  }
}

TEST(Device, AMissingCudaIndexIsNamed) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "needs CUDA";
  const auto count = static_cast<int>(torch::cuda::device_count());
  EXPECT_EQ(resolve_device("cuda:0"), c10::Device(c10::kCUDA, 0));
  EXPECT_EQ(error_of([&] { resolve_device("cuda:" + std::to_string(count)); }),
            "--device cuda:" + std::to_string(count) + ": there is no CUDA device " +
                std::to_string(count) + " (found " + std::to_string(count) + ")");
}

TEST(Device, SubnormalResultsFlushToZero) {
  flush_subnormals_to_zero();
  // 1e-30 * 1e-10 = 1e-40 is below float's smallest normal (1.18e-38).
  EXPECT_EQ((torch::full({1}, 1e-30f) * 1e-10f).item<float>(), 0.0f);
  at::globalContext().setFlushDenormal(false);
  EXPECT_GT((torch::full({1}, 1e-30f) * 1e-10f).item<float>(), 0.0f);
}

// On the CPU there is no GPU memory to report (summary.json then leaves the
// key out), and a tensor needs no copy to get there.
TEST(Device, TheCpuHasNoGpuMemoryAndNeedsNoCopy) {
  EXPECT_FALSE(peak_gpu_memory_bytes(c10::Device(c10::kCPU)).has_value());
  const auto host = torch::arange(6);
  const auto there = to_device(host, c10::Device(c10::kCPU));
  EXPECT_TRUE(there.is_same(host));
}

TEST(Device, ToAGpuTheCopyArrivesWhole) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "needs CUDA";
  const c10::Device gpu(c10::kCUDA, 0);
  std::vector<int64_t> values = {3, 1, 4, 1, 5};
  const auto there = to_device(torch::from_blob(values.data(), {5}, torch::kInt64), gpu);
  values.assign(5, 0);  // the copy went through pinned memory, not from this buffer later
  EXPECT_EQ(there.device(), gpu);
  EXPECT_TRUE(there.cpu().equal(torch::tensor({3, 1, 4, 1, 5}, torch::kInt64)));
  EXPECT_GT(peak_gpu_memory_bytes(gpu).value_or(0), 0);
}

}  // namespace
}  // namespace vit
