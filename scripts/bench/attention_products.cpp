// The attention's batched products on the CPU: LibTorch's bmm against one
// at::mm_out per matrix inside at::parallel_for (kernels/batched_matmul's way),
// for five products of an attention's forward and backward (their four
// operand layouts; Q K^T and dO V^T share one), fp32 and bf16, at the
// CPU benchmark job's shapes (3 heads of 65 x 64, batch 16 and 128). Prints the
// mean ms of 100 calls of each. Not part of the build:
//   g++ -O2 -std=c++17 -fopenmp scripts/bench/attention_products.cpp \
//     -I/usr/include/torch/csrc/api/include -ltorch -ltorch_cpu -lc10 -o /tmp/attention_products
//   env -u OPENBLAS_CORETYPE /tmp/attention_products 2
#include <ATen/Parallel.h>
#include <torch/torch.h>

#include <cstdlib>
#include <iostream>

#include "mean_ms.hpp"

namespace {

// This benchmark's timing: mean_ms.hpp's, 100 calls after 1.
template <class F>
double mean_ms(F f) {
  return ::mean_ms(f, 100, 1);
}

torch::Tensor per_matrix(const torch::Tensor& a, const torch::Tensor& b) {
  auto out = torch::empty({a.size(0), a.size(1), b.size(2)}, a.options());
  at::parallel_for(0, a.size(0), 1, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      auto slot = out.select(0, i);
      at::mm_out(slot, a.select(0, i), b.select(0, i));
    }
  });
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  torch::set_num_threads(argc > 1 ? std::atoi(argv[1]) : 2);
  const int64_t heads = 3, tokens = 65, head_dim = 64;
  for (const auto dtype : {torch::kFloat, torch::kBFloat16}) {
    for (const int64_t batch : {16, 128}) {
      const int64_t n = batch * heads;
      const auto q = torch::randn({n, tokens, head_dim}).to(dtype);
      const auto k = torch::randn({n, tokens, head_dim}).to(dtype);
      const auto p = torch::randn({n, tokens, tokens}).to(dtype);
      struct Case {
        const char* name;
        torch::Tensor a, b;
      };
      std::cout << dtype << ", batch " << batch << " (ms, bmm / per matrix):";
      for (const Case& c :
           {Case{"Q K^T", q, k.transpose(1, 2)}, Case{"P V", p, q},
            Case{"P^T dO", p.transpose(1, 2), q}, Case{"dO V^T", q, k.transpose(1, 2)},
            Case{"Q^T dS", q.transpose(1, 2), p}}) {
        const double bmm = mean_ms([&] { torch::bmm(c.a, c.b); });
        const double own = mean_ms([&] { per_matrix(c.a, c.b); });
        const double diff =
            (torch::bmm(c.a, c.b).to(torch::kFloat) - per_matrix(c.a, c.b).to(torch::kFloat))
                .abs()
                .max()
                .item<double>();
        std::cout << " | " << c.name << " " << bmm << " / " << own
                  << (diff > 1e-2 ? " (DIFFERS)" : "");
      }
      std::cout << "\n";
    }
  }
}
