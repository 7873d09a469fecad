#pragma once
// The attention's batched matrix products: a (batch, M, K) times
// b (batch, K, N), any strides, as torch::matmul computes them.
//
// fp32 on the CPU outside autocast goes through one single-threaded matrix
// product per matrix, the matrices shared out among LibTorch's threads, with
// a backward of the same kind. Why: LibTorch 1.13's fp32 bmm threads each
// small (65 x 64) product on its own and copies transposed operands, which
// every attention backward has (Q K^T forward, dS^T Q and dO V^T backward).
// bf16 stays with LibTorch: its oneDNN bmm is faster than a oneDNN call per
// matrix. Everything else (other devices and dtypes, autocast) runs
// torch::matmul. (measured: docs/benchmarks.md, "Why the own kernels")
#include <torch/types.h>

namespace vit {

torch::Tensor batched_matmul(const torch::Tensor& a, const torch::Tensor& b);

// Whether batched_matmul() runs our per-matrix products rather than torch::matmul.
bool batched_matmul_uses_own_kernel(const torch::Tensor& a, const torch::Tensor& b);

}  // namespace vit
