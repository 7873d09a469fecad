#pragma once
// AdamW's update on the CPU in one pass over the weights, their gradients
// and both moments (kernels/simd/adamw.inc), where LibTorch has no fused
// AdamW (Debian's 1.13; from 2.4 on, train/optimizer calls ATen's
// _fused_adamw_). The whole-vector operators it replaces make about twenty
// passes over those arrays, each bound by memory speed.
// (measured: docs/benchmarks.md, "Why the own kernels")
#include <torch/types.h>

namespace vit {

struct AdamWUpdate {
  double lr, weight_decay, beta1, beta2, eps;
  double step;  // t, counted from 1
};

// Whether adamw_update() can run on these: contiguous fp32 CPU tensors of one
// size, on a CPU with AVX2 or AVX-512 (as VIT_CPU_ISA allows).
bool adamw_uses_own_kernel(const torch::Tensor& values, const torch::Tensor& gradients,
                           const torch::Tensor& first_moment, const torch::Tensor& second_moment);

// One step of torch.optim.AdamW (amsgrad off) in place on values and the two
// moments, on all threads; equal to the whole-vector operators to a rounding.
void adamw_update(const torch::Tensor& values, const torch::Tensor& gradients,
                  const torch::Tensor& first_moment, const torch::Tensor& second_moment,
                  const AdamWUpdate& update);

}  // namespace vit
