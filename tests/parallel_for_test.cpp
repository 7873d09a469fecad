// at::parallel_for is inline: in code compiled without OpenMP it runs its
// whole range on the calling thread. Our build compiles with OpenMP, so our
// own parallel loops (image decode, resize, GELU) use LibTorch's threads.
#include <mutex>
#include <set>

#include <ATen/Parallel.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

namespace {

TEST(ParallelFor, OurCodeRunsOnMoreThanOneThread) {
  const int before = torch::get_num_threads();
  torch::set_num_threads(2);
  std::mutex mutex;
  std::set<int> threads;
  at::parallel_for(0, 64, /*grain_size=*/1, [&](int64_t, int64_t) {
    const std::lock_guard<std::mutex> lock(mutex);
    threads.insert(at::get_thread_num());
  });
  torch::set_num_threads(before);
  EXPECT_EQ(threads, (std::set<int>{0, 1}));
}

}  // namespace
