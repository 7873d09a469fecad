#include "vit/kernels/residual_norm.hpp"

#include <ATen/Parallel.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <string>
#include <vector>

#include "kernel_paths.hpp"
#include "vit/kernels/layer_norm.hpp"
#include "vit/kernels/residual_add.hpp"

namespace vit {
namespace {

struct SeamOperands {
  torch::Tensor x, y, bias, weight, norm_bias;
};

SeamOperands seam_operands(int64_t rows, int64_t d, torch::ScalarType y_dtype) {
  return {torch::randn({rows, d}), torch::randn({rows, d}).to(y_dtype), torch::randn({d}),
          1 + 0.5 * torch::randn({d}), torch::randn({d})};
}

// The outputs and every operand's gradient, from the gradients dz and dn of
// the two outputs (either undefined: that output unused).
struct SeamRun {
  torch::Tensor z, n;
  std::vector<torch::Tensor> grads;  // x, y, bias, weight, norm_bias
};

SeamRun run_seam(const SeamOperands& o, const torch::Tensor& dz, const torch::Tensor& dn,
                 bool fused) {
  const bool to_bf16 = o.y.scalar_type() == torch::kBFloat16;
  std::vector<torch::Tensor> leaves;
  for (const auto& t : {o.x, o.y, o.bias, o.weight, o.norm_bias})
    leaves.push_back(t.clone().requires_grad_());
  ResidualAndNorm out;
  if (fused) {
    out = add_biased_residual_then_norm(leaves[0], leaves[1], leaves[2], leaves[3], leaves[4], 1e-6,
                                        to_bf16);
  } else {
    out.sum = add_biased_residual(leaves[0], leaves[1], leaves[2]);
    out.normalized = layer_norm(out.sum, leaves[3], leaves[4], 1e-6, to_bf16);
  }
  std::vector<torch::Tensor> outputs, grads;
  if (dz.defined()) outputs.push_back(out.sum), grads.push_back(dz);
  if (dn.defined()) outputs.push_back(out.normalized), grads.push_back(dn);
  torch::autograd::backward(outputs, grads);
  SeamRun r{out.sum.detach(), out.normalized.detach(), {}};
  for (const auto& leaf : leaves)
    r.grads.push_back(leaf.grad());
  return r;
}

// One pass gives what the residual kernel and the norm kernel give apart: the
// same arithmetic, so the same bits forward; backward, x's gradient adds the
// same two terms (the same bits), and the parameters' sums run over the same
// blocks of rows (within float rounding of them). Widths around the 8- and
// 16-lane vectors, rows around the blocks of 64 and across two threads; fp32,
// and bf16 products normalized into bf16 as under autocast.
TEST(ResidualNorm, OnePassGivesTheResidualAndTheNormApart) {
  const int threads = at::get_num_threads();
  at::set_num_threads(2);
  for (const int64_t d : {1, 7, 16, 17, 192}) {
    for (const int64_t rows : {1, 65, 300}) {
      for (const auto dtype : {torch::kFloat, torch::kBFloat16}) {
        SCOPED_TRACE(testing::kernel_path() + ", d " + std::to_string(d) + ", rows " +
                     std::to_string(rows) + ", " + c10::toString(dtype));
        torch::manual_seed(d * 1000 + rows);
        const auto o = seam_operands(rows, d, dtype);
        const auto dz = torch::randn({rows, d}), dn = torch::randn({rows, d}).to(dtype);
        const auto fused = run_seam(o, dz, dn, true), apart = run_seam(o, dz, dn, false);
        EXPECT_TRUE(torch::equal(fused.z, apart.z));
        EXPECT_TRUE(torch::equal(fused.n, apart.n));
        EXPECT_EQ(fused.n.scalar_type(), dtype);
        EXPECT_TRUE(torch::equal(fused.grads[0], apart.grads[0]));  // x
        EXPECT_TRUE(torch::equal(fused.grads[1], apart.grads[1]));  // y
        EXPECT_EQ(fused.grads[1].scalar_type(), dtype);
        for (size_t i = 2; i < 5; ++i) {  // bias, weight, norm bias
          const double scale = apart.grads[i].abs().max().item<double>();
          EXPECT_LE((fused.grads[i] - apart.grads[i]).abs().max().item<double>(),
                    1e-6 * (scale + 1))
              << "operand " << i;
        }
      }
    }
  }
  at::set_num_threads(threads);
}

// With only one of the two outputs used, the other's gradient counts as zero.
TEST(ResidualNorm, AnUnusedOutputAddsNothingToTheGradients) {
  torch::manual_seed(1);
  const int64_t rows = 70, d = 24;
  const auto o = seam_operands(rows, d, torch::kBFloat16);
  const auto dz = torch::randn({rows, d}), dn = torch::randn({rows, d}).to(torch::kBFloat16);
  for (const bool sum_used : {true, false}) {
    SCOPED_TRACE(testing::kernel_path() + (sum_used ? ", the sum alone" : ", the norm alone"));
    const auto fused =
        run_seam(o, sum_used ? dz : torch::Tensor(), sum_used ? torch::Tensor() : dn, true);
    const auto apart =
        run_seam(o, sum_used ? dz : torch::Tensor(), sum_used ? torch::Tensor() : dn, false);
    EXPECT_TRUE(torch::equal(fused.grads[0], apart.grads[0]));
    EXPECT_TRUE(torch::equal(fused.grads[1], apart.grads[1]));
    if (sum_used) {  // the sum passes dz on as it is, and the norm's parameters get nothing
      EXPECT_TRUE(torch::equal(fused.grads[0], dz));
      EXPECT_FALSE(fused.grads[3].defined() && fused.grads[3].abs().max().item<float>() > 0);
    }
    EXPECT_LE((fused.grads[2] - apart.grads[2]).abs().max().item<double>(), 1e-4);
  }
}

TEST(ResidualNorm, OwnKernelRunsOnlyWhereBothKernelsDoAndTheDtypesMatch) {
  const int64_t d = 16;
  const auto x = torch::randn({3, 5, d}), v = torch::randn({d});
  const bool own = testing::own_kernels_run();
  EXPECT_EQ(biased_residual_then_norm_uses_own_kernel(x, v, v, v, false), own);
  EXPECT_EQ(biased_residual_then_norm_uses_own_kernel(x, v, v, v, true), own);
  EXPECT_EQ(biased_residual_then_norm_uses_own_kernel(x, v, v, v, false, x.clone()), own);
  EXPECT_EQ(biased_residual_then_norm_uses_own_kernel(x, v, v, v, true, x.to(torch::kBFloat16)),
            own);
  // A bf16 product normalized into fp32, or the other way round: the two apart.
  EXPECT_FALSE(
      biased_residual_then_norm_uses_own_kernel(x, v, v, v, false, x.to(torch::kBFloat16)));
  EXPECT_FALSE(biased_residual_then_norm_uses_own_kernel(x, v, v, v, true, x.clone()));
  EXPECT_FALSE(biased_residual_then_norm_uses_own_kernel(x.transpose(0, 1), v, v, v, false));
  EXPECT_FALSE(biased_residual_then_norm_uses_own_kernel(x.to(torch::kDouble), v, v, v, false));
  EXPECT_FALSE(biased_residual_then_norm_uses_own_kernel(x, v, v.narrow(0, 0, 8), v, false));
  EXPECT_FALSE(biased_residual_then_norm_uses_own_kernel(x, v, v, v.to(torch::kBFloat16), false));
}

// What our kernel does not take gives the two apart: a bf16 product with an
// fp32 norm, a strided residual.
TEST(ResidualNorm, WhatTheKernelDoesNotTakeRunsTheTwoApart) {
  torch::manual_seed(2);
  const int64_t rows = 6, d = 8;
  auto o = seam_operands(rows, d, torch::kBFloat16);
  auto out = add_biased_residual_then_norm(o.x, o.y, o.bias, o.weight, o.norm_bias, 1e-6, false);
  auto sum = add_biased_residual(o.x, o.y, o.bias);
  EXPECT_TRUE(torch::equal(out.sum, sum));
  EXPECT_TRUE(torch::equal(out.normalized, layer_norm(sum, o.weight, o.norm_bias, 1e-6)));
  EXPECT_EQ(out.normalized.scalar_type(), torch::kFloat);

  const auto strided = torch::randn({d, rows}).t();
  out = add_biased_residual_then_norm(strided, o.y.to(torch::kFloat), o.bias, o.weight, o.norm_bias,
                                      1e-6, false);
  sum = strided + (o.y.to(torch::kFloat) + o.bias);
  EXPECT_TRUE(torch::allclose(out.sum, sum));
  EXPECT_TRUE(torch::allclose(out.normalized,
                              torch::layer_norm(sum, {d}, o.weight, o.norm_bias, 1e-6),
                              /*rtol=*/1e-5, /*atol=*/1e-5));
}

}  // namespace
}  // namespace vit
