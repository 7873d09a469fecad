#include "vit/kernels/linear.hpp"

#include <ATen/Parallel.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <limits>
#include <string>

#include "vit/build_features.hpp"
#include "vit/infer/precision.hpp"

namespace vit {
namespace {

constexpr bool kBuildHasOneDnn = VIT_WITH_ONEDNN_SGEMM != 0;

TEST(Linear, OneDnnRunsOnFp32CpuTensorsWhereTheBuildHasItAndNowhereElse) {
  const auto x = torch::randn({2, 5, 8}), w = torch::randn({4, 8}), b = torch::randn({4});
  EXPECT_EQ(linear_uses_own_kernel(x, w, b), kBuildHasOneDnn);
  EXPECT_EQ(linear_uses_own_kernel(x, w), kBuildHasOneDnn);
  EXPECT_EQ(linear_uses_own_kernel(x.narrow(1, 0, 1), w, b), kBuildHasOneDnn);
  EXPECT_FALSE(linear_uses_own_kernel(x.to(torch::kBFloat16), w.to(torch::kBFloat16)));
  EXPECT_FALSE(linear_uses_own_kernel(x.to(torch::kDouble), w.to(torch::kDouble)));
  EXPECT_FALSE(linear_uses_own_kernel(x, w.t().contiguous().t()));  // strided weight
  EXPECT_FALSE(linear_uses_own_kernel(x, w, b.to(torch::kBFloat16)));
  EXPECT_FALSE(linear_uses_own_kernel(x, w, b.narrow(0, 0, 3)));
  EXPECT_FALSE(linear_uses_own_kernel(x, w.narrow(1, 0, 7)));    // widths disagree
  EXPECT_FALSE(linear_uses_own_kernel(x.narrow(0, 0, 0), w));    // nothing to multiply
  EXPECT_FALSE(linear_uses_own_kernel(x, torch::randn({}), b));  // no matrix: ATen says why
  {
    AutocastScope autocast(Precision::kBf16, torch::kCPU);
    EXPECT_FALSE(linear_uses_own_kernel(x, w, b));  // autocast's bf16 products are ATen's
  }
}

struct LinearResult {
  torch::Tensor y, dx, dw, db;
};

LinearResult run_linear(const torch::Tensor& x, const torch::Tensor& w, const torch::Tensor& b,
                        const torch::Tensor& dy) {
  auto xl = x.detach().requires_grad_(), wl = w.detach().requires_grad_();
  auto bl = b.defined() ? b.detach().requires_grad_() : b;
  auto y = vit::linear(xl, wl, bl);
  y.backward(dy);
  return {y.detach(), xl.grad(), wl.grad(), b.defined() ? bl.grad() : torch::Tensor()};
}

// |got - exact| <= gamma_k (|a| |b| summed), the bound of a length-k dot
// product in fp32 whatever the order of its sums (Higham, 3.1), with gamma_k
// = k u / (1 - k u) and u = 2^-24; `magnitude` is that sum of absolute terms.
void expect_within_dot_bound(const torch::Tensor& got, const torch::Tensor& exact,
                             const torch::Tensor& magnitude, int64_t k, const std::string& what) {
  ASSERT_EQ(got.sizes(), exact.sizes()) << what;
  const double u = std::numeric_limits<float>::epsilon() / 2;
  const double gamma = (k + 1) * u / (1 - (k + 1) * u);  // + 1: the bias's add
  const auto excess = (got.to(torch::kDouble) - exact).abs() - gamma * magnitude;
  EXPECT_LE(excess.max().item<double>(), 1e-30) << what;
}

// Forward and the three gradients against the products in double, within
// fp32's bound for dot products of their length: rows of 1 to 1,040, widths
// around oneDNN's blocks, with and without a bias, 2-D and 3-D inputs and the
// class token's strided narrow of a (B, N, D) input. A transposed operand or
// a lost bias is off by the values themselves, far outside the bound.
TEST(Linear, ForwardAndGradientsAreTheProductsInDoubleWithinFp32sBound) {
  const int threads = at::get_num_threads();
  at::set_num_threads(2);
  for (const int64_t batch : {1, 16}) {
    for (const int64_t tokens : {1, 65}) {
      for (const int64_t in : {1, 17, 192}) {
        for (const int64_t out : {3, 576}) {
          for (const bool with_bias : {true, false}) {
            for (const bool class_token : {false, true}) {
              const std::string what = std::to_string(batch) + "x" + std::to_string(tokens) +
                                       " in " + std::to_string(in) + " out " + std::to_string(out) +
                                       (with_bias ? " bias" : "") +
                                       (class_token ? " class token" : "");
              torch::manual_seed(batch * 1000 + tokens * 10 + in + out);
              auto full = torch::randn({batch, tokens, in});
              const auto x = class_token ? full.narrow(1, 0, 1) : full;
              const auto w = torch::randn({out, in}),
                         b = with_bias ? torch::randn({out}) : torch::Tensor();
              const auto dy = torch::randn({batch, x.size(1), out});
              const auto r = run_linear(x, w, b, dy);

              const auto xd = x.to(torch::kDouble), wd = w.to(torch::kDouble),
                         dyd = dy.to(torch::kDouble);
              const auto x2 = xd.reshape({-1, in}), dy2 = dyd.reshape({-1, out});
              auto y = torch::matmul(xd, wd.t()), y_mag = torch::matmul(xd.abs(), wd.abs().t());
              if (with_bias) {
                y = y + b.to(torch::kDouble);
                y_mag = y_mag + b.to(torch::kDouble).abs();
              }
              expect_within_dot_bound(r.y, y, y_mag, in, what + ": y");
              expect_within_dot_bound(r.dx, torch::matmul(dyd, wd),
                                      torch::matmul(dyd.abs(), wd.abs()), out, what + ": dx");
              expect_within_dot_bound(r.dw, dy2.t().mm(x2), dy2.abs().t().mm(x2.abs()), x2.size(0),
                                      what + ": dw");
              if (with_bias)
                expect_within_dot_bound(r.db, dy2.sum(0), dy2.abs().sum(0), x2.size(0),
                                        what + ": db");
            }
          }
        }
      }
    }
  }
  at::set_num_threads(threads);
}

// Inputs in any layout are read right: rows read backwards, a transposed
// input, an expanded output gradient (the backward of a sum), a column, and a
// one-row weight whose row stride LibTorch leaves arbitrary (a transposed
// column, which it calls contiguous).
TEST(Linear, InputsInAnyLayoutGiveTheProductsOfTheirValues) {
  torch::manual_seed(5);
  const auto w = torch::randn({6, 9}), b = torch::randn({6});
  for (const auto& x : {torch::randn({4, 9}).flip(0), torch::randn({3, 9, 5}).transpose(1, 2)}) {
    auto xl = x.detach().requires_grad_(), wl = w.detach().requires_grad_();
    auto xa = x.detach().requires_grad_(), wa = w.detach().requires_grad_();
    auto y = vit::linear(xl, wl, b), expected = at::linear(xa, wa, b);
    EXPECT_TRUE(torch::allclose(y, expected, 1e-5, 1e-5)) << x.sizes();
    y.sum().backward();
    expected.sum().backward();
    EXPECT_TRUE(torch::allclose(xl.grad(), xa.grad(), 1e-5, 1e-5)) << x.sizes();
    EXPECT_TRUE(torch::allclose(wl.grad(), wa.grad(), 1e-5, 1e-5)) << x.sizes();
  }
  const auto column = torch::randn({7, 1}), w1 = torch::randn({3, 1});
  EXPECT_TRUE(torch::allclose(vit::linear(column, w1), at::linear(column, w1), 1e-6, 1e-6));
  const auto x = torch::randn({5, 9}), one_output = torch::randn({9, 1}).t();  // strides (1, 1)
  ASSERT_TRUE(vit::linear_uses_own_kernel(x, one_output) == kBuildHasOneDnn);
  EXPECT_TRUE(torch::allclose(vit::linear(x, one_output), at::linear(x, one_output), 1e-5, 1e-5));
}

// Without a graph (evaluation, inference mode) the layer gives the training
// forward's values to the bit: eval and predict agree with what training saw.
TEST(Linear, WithoutAGraphTheForwardIsTheSameToTheBit) {
  torch::manual_seed(3);
  const auto x = torch::randn({4, 65, 192}), w = torch::randn({576, 192}), b = torch::randn({576});
  const auto trained = run_linear(x, w, b, torch::ones({4, 65, 576})).y;
  torch::Tensor evaluated, inferred;
  {
    torch::NoGradGuard no_grad;
    evaluated = vit::linear(x, w, b);
  }
  {
    c10::InferenceMode inference;
    inferred = vit::linear(x, w, b);
  }
  EXPECT_TRUE(torch::equal(trained, evaluated));
  EXPECT_TRUE(torch::equal(trained, inferred));
  EXPECT_FALSE(evaluated.requires_grad());
}

// Where the kernel does not run, the layer is ATen's linear.
TEST(Linear, EverythingElseIsAtensLinear) {
  torch::manual_seed(4);
  const auto x = torch::randn({3, 7, 16}).to(torch::kBFloat16),
             w = torch::randn({5, 16}).to(torch::kBFloat16),
             b = torch::randn({5}).to(torch::kBFloat16);
  EXPECT_TRUE(torch::equal(vit::linear(x, w, b), at::linear(x, w, b)));
  const auto xd = torch::randn({3, 16}, torch::kDouble), wd = torch::randn({5, 16}, torch::kDouble);
  EXPECT_TRUE(torch::equal(vit::linear(xd, wd), at::linear(xd, wd)));
}

}  // namespace
}  // namespace vit
