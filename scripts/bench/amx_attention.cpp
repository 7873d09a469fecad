// The attention's core on AMX's tiles (kernels/attention_from_projection, kernels/amx): one
// head in the thread's cache, forward and backward, then every head of a
// batch against the split heads with LibTorch's bmm and the own softmax
// (the path CPUs without AMX take). bf16. Prints us per head, then ms per
// block (mean of 40 calls, three rounds).
// Not part of the build; after scripts/build.sh (Debian's line):
//   g++ -O2 -std=c++17 -fopenmp -Ibuild/layers/kernels -Ibuild/layers/base \
//     -I/usr/include/torch/csrc/api/include scripts/bench/amx_attention.cpp \
//     build/libvit_kernels.a build/libvit_base.a -ltorch -ltorch_cpu -lc10 -ldnnl \
//     -lspdlog -lfmt -o /tmp/amx_attention
//   /tmp/amx_attention [THREADS HEADS TOKENS WIDTH]
// default 2 3 65 64, the CPU benchmark job's heads; the demo's are 2 4 16 32.
#include <ATen/Parallel.h>
#include <torch/torch.h>

#include <cstdlib>
#include <iostream>
#include <vector>

#include "../../src/kernels/amx/attention_head.hpp"
#include "../../src/kernels/amx/tiles.hpp"
#include "vit/kernels/attention_from_projection.hpp"
#include "vit/kernels/head_split.hpp"
#include "vit/kernels/softmax.hpp"

#include "mean_ms.hpp"

namespace {

// This benchmark's timing: mean_ms.hpp's, 40 calls after 2.
template <class F>
double mean_ms(F f) {
  return ::mean_ms(f, 40, 2);
}

// One head, its rows in cache: us per head_forward and per head_backward.
void one_head(int64_t heads, int64_t tokens, int64_t width) {
  using namespace vit::detail::amx;
  const int64_t row = 3 * heads * width;
  std::vector<c10::BFloat16> qkv(tokens * row), probs(tokens * tokens), out(tokens * row),
      dqkv(tokens * row);
  std::vector<float> bias(row, 0.1f), share(3 * width);
  for (size_t i = 0; i < qkv.size(); ++i)
    qkv[i] = float((i * 7) % 13) / 13 - 0.5f;
  const HeadInputs in{qkv.data(),  qkv.data() + heads * width,  qkv.data() + 2 * heads * width, row,
                      bias.data(), bias.data() + heads * width, bias.data() + 2 * heads * width};
  const HeadGradients g{
      dqkv.data(),  dqkv.data() + heads * width, dqkv.data() + 2 * heads * width, row,
      share.data(), share.data() + width,        share.data() + 2 * width};
  HeadScratch scratch({tokens, width, 0.125f});
  TileScope tiles;
  const double forward = mean_ms([&] {
    for (int i = 0; i < 1000; ++i)
      head_forward(in, probs.data(), out.data(), heads * width, scratch);
  });
  const double backward = mean_ms([&] {
    for (int i = 0; i < 1000; ++i)
      head_backward(out.data(), heads * width, in, probs.data(), g, scratch);
  });
  std::cout << "one head in cache: forward " << forward << " us, backward " << backward << " us\n";
}

}  // namespace

int main(int argc, char** argv) {
  const auto arg = [&](int i, int64_t fallback) {
    return argc > i ? std::atoll(argv[i]) : fallback;
  };
  at::set_num_threads(static_cast<int>(arg(1, 2)));
  const int64_t B = 128, H = arg(2, 3), N = arg(3, 65), D = arg(4, 64);
  if (!vit::detail::amx::tiles_usable()) {
    std::cerr << "amx_attention: no AMX tiles on this CPU (or VIT_CPU_ISA caps them)\n";
    return 1;
  }
  one_head(H, N, D);
  torch::manual_seed(0);
  auto qkv = torch::randn({B, N, 3 * H * D}).to(torch::kBFloat16).requires_grad_();
  auto bias = torch::randn({3 * H * D}).requires_grad_();
  const auto dout = torch::randn({B, N, H * D}).to(torch::kBFloat16);
  const double scale = 1.0 / std::sqrt(double(D));
  const auto own = [&] { return vit::attention_from_projection(qkv, bias, H, scale); };
  const auto split = [&] {
    const auto h = vit::split_heads_with_bias(qkv, bias, 3, H, D);
    const auto as_batch = [](const torch::Tensor& t) { return t.flatten(0, 1); };
    const auto s = torch::matmul(as_batch(h[0]), as_batch(h[1]).transpose(1, 2));
    const auto p = vit::scaled_softmax(s.view({B, H, N, N}), scale, torch::kBFloat16);
    return torch::matmul(as_batch(p), as_batch(h[2]))
        .view({B, H, N, D})
        .transpose(1, 2)
        .reshape({B, N, H * D});
  };
  const auto with_backward = [&](auto f) {
    return [&, f] {
      qkv.mutable_grad() = torch::Tensor();
      bias.mutable_grad() = torch::Tensor();
      f().backward(dout);
    };
  };
  for (int round = 0; round < 3; ++round) {
    double own_forward, split_forward;
    {
      torch::NoGradGuard no_grad;
      own_forward = mean_ms(own);
      split_forward = mean_ms(split);
    }
    std::cout << "a block's " << B * H << " heads, ms: forward " << own_forward << " (split heads "
              << split_forward << "), forward and backward " << mean_ms(with_backward(own))
              << " (split heads " << mean_ms(with_backward(split)) << ")\n";
  }
}
