#include "vit/train/cuda_graph_step.hpp"

#include <gtest/gtest.h>
#include <torch/torch.h>

namespace vit {
namespace {

data::Batch batch_of(int64_t size, double value, c10::Device device) {
  data::Batch b;
  b.images = torch::full({size, 1, 2, 2}, value, torch::TensorOptions().device(device));
  b.labels = torch::zeros({size}, torch::TensorOptions().dtype(torch::kInt64).device(device));
  return b;
}

// A step that adds its micro-batches' pixel sums to a total on the device.
struct Summing {
  at::Tensor total;
  explicit Summing(c10::Device device)
      : total(torch::zeros({}, torch::TensorOptions().dtype(torch::kFloat64).device(device))) {}
  CudaGraphStep::Step step() {
    return [this](const std::vector<data::Batch>& micro_batches) {
      for (const auto& b : micro_batches)
        total.add_(b.images.sum().to(torch::kFloat64));
    };
  }
};

TEST(CudaGraphStep, OnTheCpuEveryStepRunsEagerly) {
  const c10::Device cpu(c10::kCPU);
  Summing sum(cpu);
  CudaGraphStep step(sum.step(), cpu);
  for (int i = 1; i <= 6; ++i)
    step.run({batch_of(3, i, cpu)});
  EXPECT_EQ(sum.total.item<double>(), 12.0 * (1 + 2 + 3 + 4 + 5 + 6));  // 12 pixels a batch
  EXPECT_EQ(step.replays(), 0);
}

// Three eager steps, then a capture; each replay reads the micro-batches it
// is given, and micro-batches of other shapes run eagerly.
TEST(CudaGraphStep, ReplaysReadEachNewBatch) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "needs a CUDA device";
  const c10::Device gpu(c10::kCUDA, 0);
  Summing sum(gpu);
  CudaGraphStep step(sum.step(), gpu, /*warmup_steps=*/3);
  double expected = 0;
  for (int i = 1; i <= 8; ++i) {
    step.run({batch_of(3, i, gpu), batch_of(3, 10 * i, gpu)});
    expected += 12.0 * i + 120.0 * i;
  }
  step.run({batch_of(2, 100, gpu)});  // 8 pixels: eagerly
  expected += 800;
  EXPECT_EQ(sum.total.item<double>(), expected);
  EXPECT_EQ(step.replays(), 5);  // steps 4 (the capture's own run) to 8
}

}  // namespace
}  // namespace vit
