// The linear layers' weight gradients on the CPU, dW = dY^T X over the
// job's 8,320 token rows: one LibTorch mm on all threads against the rows
// split in two halves, one at::mm_out per thread inside at::parallel_for,
// the two partial products then added. bf16, at the CPU benchmark job's four
// shapes (qkv 192 -> 576, proj 192 -> 192, fc1 192 -> 768, fc2 768 -> 192).
// Prints GFLOP/s of the best of 20 calls of each, and of one thread alone.
// Not part of the build:
//   g++ -O2 -std=c++17 -fopenmp scripts/bench/weight_gradient_split.cpp \
//     -I/usr/include/torch/csrc/api/include -ltorch -ltorch_cpu -lc10 -o /tmp/weight_gradient_split
//   /tmp/weight_gradient_split 2
#include <ATen/Parallel.h>
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <utility>
#include <vector>

namespace {

template <class F>
double best_ms(F f, int calls = 20) {
  for (int i = 0; i < 3; ++i)
    f();
  double best = 1e30;
  for (int i = 0; i < calls; ++i) {
    const auto start = std::chrono::steady_clock::now();
    f();
    best = std::min(
        best, std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
                  .count());
  }
  return best;
}

// dy^T x with the rows split into `parts` blocks, one per task.
torch::Tensor split_over_rows(const torch::Tensor& dy, const torch::Tensor& x, int64_t parts) {
  const int64_t rows = x.size(0);
  auto partial = torch::empty({parts, dy.size(1), x.size(1)}, x.options());
  at::parallel_for(0, parts, 1, [&](int64_t begin, int64_t end) {
    for (int64_t p = begin; p < end; ++p) {
      const int64_t first = rows * p / parts, last = rows * (p + 1) / parts;
      auto out = partial.select(0, p);
      at::mm_out(out, dy.narrow(0, first, last - first).t(), x.narrow(0, first, last - first));
    }
  });
  return partial.sum(0);
}

}  // namespace

int main(int argc, char** argv) {
  const int threads = argc > 1 ? std::atoi(argv[1]) : 2;
  torch::set_num_threads(threads);
  torch::NoGradGuard no_grad;
  const int64_t rows = 8320;
  const std::vector<std::pair<int64_t, int64_t>> shapes = {
      {192, 576}, {192, 192}, {192, 768}, {768, 192}};
  std::printf("bf16 dW = dY^T X over %ld rows, %d threads, GFLOP/s\n", rows, threads);
  for (const auto& [in, out] : shapes) {
    const auto x = torch::randn({rows, in}).to(torch::kBFloat16);
    const auto dy = torch::randn({rows, out}).to(torch::kBFloat16);
    const double gflop = 2.0 * rows * in * out / 1e9;
    const double whole = best_ms([&] { torch::mm(dy.t(), x); });
    const double split = best_ms([&] { split_over_rows(dy, x, threads); });
    const double alone = best_ms([&] {  // the whole product on one thread
      at::parallel_for(0, threads, 1, [&](int64_t begin, int64_t) {
        if (begin == 0) torch::mm(dy.t(), x);
      });
    });
    std::printf("%4ld -> %4ld: mm %5.0f   rows split in %d %5.0f   one thread %5.0f\n", in, out,
                gflop / whole * 1e3, threads, gflop / split * 1e3, gflop / alone * 1e3);
  }
}
