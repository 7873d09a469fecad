#include "vit/kernels/residual_add.hpp"

#include <ATen/Parallel.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <string>

#include "kernel_paths.hpp"
#include "vit/infer/precision.hpp"
#include "vit/model/vision_transformer.hpp"

namespace vit {
namespace {

TEST(BiasedResidual, OwnKernelRunsWhereTheCpuHasAvx2AndOnlyOnContiguousFloatWithFloatOrBf16Y) {
  const auto x = torch::randn({2, 3, 8}), bias = torch::randn({8});
  EXPECT_EQ(biased_residual_uses_own_kernel(x, bias), testing::own_kernels_run());
  EXPECT_EQ(biased_residual_uses_own_kernel(x, bias, x.to(torch::kBFloat16)),
            testing::own_kernels_run());
  EXPECT_EQ(biased_residual_uses_own_kernel(x, bias, x.clone()), testing::own_kernels_run());
  EXPECT_FALSE(biased_residual_uses_own_kernel(x, bias, x.to(torch::kHalf)));
  EXPECT_FALSE(biased_residual_uses_own_kernel(x, bias, x.narrow(1, 0, 2)));
  EXPECT_FALSE(biased_residual_uses_own_kernel(x.transpose(0, 1), bias));
  EXPECT_FALSE(biased_residual_uses_own_kernel(x.to(torch::kDouble), bias));
  EXPECT_FALSE(biased_residual_uses_own_kernel(x, bias.to(torch::kBFloat16)));
  EXPECT_FALSE(biased_residual_uses_own_kernel(x, bias.narrow(0, 0, 7)));
  EXPECT_FALSE(biased_residual_uses_own_kernel(x, torch::Tensor()));
}

struct Grads {
  torch::Tensor z, dx, dy, dbias;
};

Grads run_residual(const torch::Tensor& x, const torch::Tensor& y, const torch::Tensor& bias,
                   const torch::Tensor& dz) {
  auto xl = x.clone().requires_grad_(), yl = y.clone().requires_grad_(),
       bl = bias.clone().requires_grad_();
  auto z = add_biased_residual(xl, yl, bl);
  z.backward(dz);
  return {z.detach(), xl.grad(), yl.grad(), bl.grad()};
}

// The forward adds in ATen's order, (y + bias) then x, so it is ATen's result
// to the bit; x's gradient is the output's, y's the output's in y's dtype
// (rounded as LibTorch rounds it), the bias's the output's summed over the
// rows, within 1e-6 of the sum in double (summed in blocks of 64 rows, one
// per thread). Widths around the 8- and 16-lane vectors, row counts around the
// blocks and across threads.
TEST(BiasedResidual, ForwardIsAtensAndTheGradientsAreTheOutputsPassedSummedOrRounded) {
  const int threads = at::get_num_threads();
  at::set_num_threads(2);
  for (const int64_t d : {1, 7, 8, 9, 15, 16, 17, 192}) {
    for (const int64_t rows : {1, 63, 64, 65, 8320}) {
      for (const auto y_dtype : {torch::kFloat, torch::kBFloat16}) {
        torch::manual_seed(d * 10000 + rows);
        const auto x = torch::randn({rows, d}), y = torch::randn({rows, d}).to(y_dtype),
                   bias = torch::randn({d}), dz = torch::randn({rows, d}) + 3;
        const std::string at = "d " + std::to_string(d) + ", rows " + std::to_string(rows) +
                               ", y " + c10::toString(y_dtype);
        const auto g = run_residual(x, y, bias, dz);
        ASSERT_EQ(g.z.scalar_type(), torch::kFloat) << at;
        EXPECT_TRUE(g.z.equal(x + (y + bias))) << at;
        EXPECT_TRUE(g.dx.equal(dz)) << at;
        ASSERT_EQ(g.dy.scalar_type(), y_dtype) << at;
        EXPECT_TRUE(g.dy.equal(dz.to(y_dtype))) << at;
        const auto exact = dz.to(torch::kDouble).sum(0);
        const double error = (g.dbias.to(torch::kDouble) - exact).abs().max().item<double>();
        EXPECT_LE(error, 1e-6 * exact.abs().max().item<double>()) << at;
      }
    }
  }
  at::set_num_threads(threads);
}

TEST(BiasedResidual, GradientsOnlyWhereAsked) {
  const auto x = torch::randn({5, 16}),
             y = torch::randn({5, 16}).to(torch::kBFloat16).requires_grad_(),
             bias = torch::randn({16});
  const auto dz = torch::randn({5, 16});
  add_biased_residual(x, y, bias).backward(dz);
  EXPECT_TRUE(y.grad().equal(dz.to(torch::kBFloat16)));
  torch::NoGradGuard no_grad;
  const auto z = add_biased_residual(x, y, bias);
  EXPECT_FALSE(z.requires_grad());
  EXPECT_TRUE(z.equal(x + (y + bias)));
}

TEST(BiasedResidual, StridedInputGetsAtensValues) {
  const auto x = torch::randn({16, 16}).t(), y = torch::randn({16, 16}), bias = torch::randn({16});
  ASSERT_FALSE(x.is_contiguous());
  EXPECT_TRUE(add_biased_residual(x, y, bias).equal(x + (y + bias)));
}

// The blocks' residual adds with the bias moved out of the product give the
// block LibTorch's way computes, output and gradients, in fp32 and under bf16
// autocast (where the bias is now added in fp32 rather than in the bf16
// product, so within bf16 rounding).
TEST(BiasedResidual, BlocksMatchTheUnfusedResidualAdds) {
  ModelConfig cfg;
  cfg.image_size = 8, cfg.patch_size = 4, cfg.channels = 1, cfg.num_classes = 3;
  cfg.dim = 32, cfg.depth = 1, cfg.heads = 2, cfg.mlp_dim = 64;
  torch::manual_seed(0);
  Block block(cfg);
  {
    torch::NoGradGuard no_grad;
    for (auto& p : block->parameters())
      p.normal_(0, 0.2);  // biases far from their zero initialisation
  }
  const auto input = torch::randn({4, 5, 32});
  const std::string bf16_refused = testing::cpu_bf16_products_refused();
  for (const Precision precision : {Precision::kFp32, Precision::kBf16}) {
    if (precision == Precision::kBf16 && !bf16_refused.empty()) continue;
    const auto grads = [&](bool fused) {
      block->zero_grad();
      AutocastScope autocast(precision, torch::kCPU);
      torch::Tensor x;
      if (fused) {
        x = block->forward(input);
      } else {
        const auto h = input + block->attn(block->norm1(input));
        x = h + block->mlp(block->norm2(h));
      }
      x.square().sum().backward();
      std::vector<torch::Tensor> out{x.detach()};
      for (const auto& p : block->parameters())
        out.push_back(p.grad().clone());
      return out;
    };
    const auto fused = grads(true), plain = grads(false);
    const double tolerance = precision == Precision::kFp32 ? 1e-5 : 3e-2;
    for (size_t i = 0; i < fused.size(); ++i) {
      const double scale = plain[i].abs().max().item<double>() + 1e-3;
      EXPECT_LE((fused[i] - plain[i]).abs().max().item<double>(), tolerance * scale)
          << enum_name(precision) << ", tensor " << i;
    }
  }
  if (!bf16_refused.empty()) GTEST_SKIP() << "the bf16 case (fp32's ran): " << bf16_refused;
}

}  // namespace
}  // namespace vit
