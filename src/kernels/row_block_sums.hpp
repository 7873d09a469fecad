#pragma once
// How the own kernels sum a parameter's gradient over the rows while they
// make another pass over them (kernels/residual_add, gelu, layer_norm and
// residual_norm): the rows split into one block per thread, each block
// adding into a share of its own, so no two threads write the same memory,
// and the shares added at the end.
#include <algorithm>
#include <cstdint>

#include <ATen/Parallel.h>
#include <torch/torch.h>

namespace vit::detail {

// Calls work(begin, end, share) for blocks of rows [begin, end) covering
// [0, rows), on LibTorch's threads; `share` points at d zeroed floats that
// the call adds its rows' sums into. Returns the shares' sum: d floats.
template <typename Work>
torch::Tensor summed_over_row_blocks(int64_t rows, int64_t d, const Work& work) {
  const int64_t blocks = std::max<int64_t>(1, std::min<int64_t>(at::get_num_threads(), rows));
  auto shares = torch::zeros({blocks, d}, torch::kFloat);
  float* sums = shares.data_ptr<float>();
  at::parallel_for(0, blocks, 1, [&](int64_t first, int64_t last) {
    for (int64_t block = first; block < last; ++block)
      work(rows * block / blocks, rows * (block + 1) / blocks, sums + block * d);
  });
  return shares.sum(/*dim=*/0);
}

}  // namespace vit::detail
