#include "vit/kernels/gelu.hpp"

#include <cmath>
#include <limits>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "kernel_paths.hpp"

namespace vit {
namespace {

// x Phi(x) and its derivative Phi(x) + x phi(x), in double.
double exact_gelu(double x) {
  return 0.5 * x * std::erfc(-x / std::sqrt(2.0));
}

double exact_slope(double x) {
  return 0.5 * std::erfc(-x / std::sqrt(2.0)) + x * std::exp(-0.5 * x * x) / std::sqrt(2.0 * M_PI);
}

// Every bf16 value in [-limit, limit], as float.
torch::Tensor all_bf16_values_within(float limit) {
  const auto bits = torch::arange(0, 1 << 16, torch::kInt32).to(torch::kInt16);
  const auto values = bits.view(torch::kBFloat16).to(torch::kFloat);
  return values.masked_select(values.abs() <= limit);
}

TEST(Gelu, OwnKernelRunsWhereTheCpuHasAvx2AndOnlyOnContiguousFloatOrBf16) {
  const auto x = torch::randn({4, 6});
  EXPECT_EQ(gelu_uses_own_kernel(x), testing::own_kernels_run());
  EXPECT_EQ(gelu_uses_own_kernel(x.to(torch::kBFloat16)), testing::own_kernels_run());
  EXPECT_FALSE(gelu_uses_own_kernel(x.t()));
  EXPECT_FALSE(gelu_uses_own_kernel(x.to(torch::kDouble)));
  EXPECT_FALSE(gelu_uses_own_kernel(x.to(torch::kHalf)));
}

// The exact values of `x`, in double.
torch::Tensor exact_gelu_of(const torch::Tensor& x) {
  auto out = x.to(torch::kDouble).clone();
  auto* p = out.data_ptr<double>();
  for (int64_t i = 0; i < out.numel(); ++i)
    p[i] = exact_gelu(p[i]);
  return out;
}

// dy times the exact derivative at x, in double.
torch::Tensor exact_gradient_of(const torch::Tensor& x, const torch::Tensor& dy) {
  auto out = x.to(torch::kDouble).clone();
  auto* p = out.data_ptr<double>();
  for (int64_t i = 0; i < out.numel(); ++i)
    p[i] = exact_slope(p[i]);
  return out * dy.to(torch::kDouble);
}

// vit::gelu's output and input gradient for `dy`, and LibTorch's.
struct Values {
  torch::Tensor y, dx;
};

Values run_gelu(const torch::Tensor& x, const torch::Tensor& dy, bool libtorch) {
  auto input = x.clone().requires_grad_();
  auto y = libtorch ? torch::gelu(input) : vit::gelu(input);
  y.backward(dy);
  return {y.detach(), input.grad()};
}

// Where LibTorch's operators run: its values, forward and backward, to the bit.
void expect_libtorchs_values(const torch::Tensor& x, const torch::Tensor& dy) {
  const Values ours = run_gelu(x, dy, false), theirs = run_gelu(x, dy, true);
  EXPECT_TRUE(ours.y.equal(theirs.y)) << testing::kernel_path();
  EXPECT_TRUE(ours.dx.equal(theirs.dx)) << testing::kernel_path();
}

// Own kernel: within 2e-7 (1 + |x|) of the exact value in float, the erf
// approximation's 1.5e-7 and float rounding. Sizes around the 8- and 16-lane
// vectors and across the parallel chunks check the tails.
TEST(Gelu, FloatMatchesTheExactFormula) {
  for (const int64_t n : {1, 7, 8, 9, 15, 16, 17, 100003}) {
    const auto x = torch::linspace(-12.0, 12.0, n == 1 ? 2 : n).narrow(0, 0, n).contiguous();
    if (!testing::own_kernels_run()) {
      expect_libtorchs_values(x, torch::ones_like(x));
      continue;
    }
    const auto y = vit::gelu(x).to(torch::kDouble);
    const auto worst = ((y - exact_gelu_of(x)).abs() / (1 + x.to(torch::kDouble).abs())).max();
    EXPECT_LT(worst.item<double>(), 2e-7) << "n = " << n;
  }
}

// Every bf16 input in [-12, 12]. Own kernel: the output is the exact value
// rounded to bf16, or one bf16 step from it where the float result lies that
// close to a rounding boundary (or the left tail's error exceeds a step of a
// tiny value).
TEST(Gelu, Bf16IsTheExactValueRounded) {
  const auto x = all_bf16_values_within(12.0f);
  ASSERT_GT(x.numel(), 10000);
  const auto x16 = x.to(torch::kBFloat16);
  if (!testing::own_kernels_run()) return expect_libtorchs_values(x16, torch::ones_like(x16));
  const auto y = vit::gelu(x16).to(torch::kDouble);
  const auto exact = exact_gelu_of(x);
  const auto rounded = exact.to(torch::kFloat).to(torch::kBFloat16).to(torch::kDouble);
  const auto bound = exact.abs() / 256 + 2e-7 * (1 + x.to(torch::kDouble).abs());
  EXPECT_LE(((y - exact).abs() - bound).max().item<double>(), 0.0);
  EXPECT_GT(y.eq(rounded).sum().item<int64_t>(), 0.995 * x.numel());
}

// Own kernel: within float rounding of dy times the exact derivative (and a
// bf16 step of it for bf16, where dy and the result round).
TEST(Gelu, GradientMatchesTheExactDerivative) {
  for (const auto dtype : {torch::kFloat, torch::kBFloat16}) {
    const auto x = torch::linspace(-12.0, 12.0, 20011).to(dtype);
    const auto dy = torch::randn({20011}).to(dtype);
    if (!testing::own_kernels_run()) {
      expect_libtorchs_values(x, dy);
      continue;
    }
    const auto dx = run_gelu(x, dy, false).dx.to(torch::kDouble);
    const auto exact = exact_gradient_of(x, dy);
    const double step = dtype == torch::kFloat ? 0 : 1.0 / 128;
    const auto bound =
        step * exact.abs() + 4e-7 * (1 + x.to(torch::kDouble).abs()) * dy.to(torch::kDouble).abs();
    EXPECT_LE(((dx - exact).abs() - bound).max().item<double>(), 0.0) << "dtype " << dtype;
  }
}

// Own kernel: NaN and the infinities give the limits of x Phi(x) where they
// exist (+inf -> +inf) and NaN where they do not (-inf: -inf * 0), forward
// and backward, so that a diverging step is still caught. Fixed values rather
// than torch::gelu's: LibTorch 1.13 gives +inf at +inf, 2.15 gives NaN.
TEST(Gelu, NonFiniteValuesGiveTheLimitOrNaN) {
  const float inf = std::numeric_limits<float>::infinity(), nan = std::nanf("");
  const auto x = torch::tensor({nan, inf, -inf, 0.0f, -30.0f, 30.0f});
  const auto expected_y = torch::tensor({nan, inf, nan, 0.0f, 0.0f, 30.0f});
  const auto expected_slope = torch::tensor({nan, nan, nan, 0.5f, 0.0f, 1.0f});
  for (const auto dtype : {torch::kFloat, torch::kBFloat16}) {
    const auto input = x.to(dtype);
    if (!testing::own_kernels_run()) {
      const Values ours = run_gelu(input, torch::ones_like(input), false),
                   theirs = run_gelu(input, torch::ones_like(input), true);
      EXPECT_TRUE(torch::allclose(ours.y, theirs.y, 0, 0, /*equal_nan=*/true));
      EXPECT_TRUE(torch::allclose(ours.dx, theirs.dx, 0, 0, /*equal_nan=*/true));
      continue;
    }
    const Values v = run_gelu(input, torch::ones_like(input), false);
    EXPECT_TRUE(torch::allclose(v.y.to(torch::kFloat), expected_y, /*rtol=*/0, /*atol=*/0,
                                /*equal_nan=*/true))
        << v.y;
    EXPECT_TRUE(torch::allclose(v.dx.to(torch::kFloat), expected_slope, /*rtol=*/0,
                                /*atol=*/1e-30, /*equal_nan=*/true))
        << v.dx;
  }
}

// A strided view takes torch::gelu's path and gets its values.
TEST(Gelu, StridedInputGetsTorchsValues) {
  torch::manual_seed(0);
  const auto x = torch::randn({33, 17}).t();
  EXPECT_TRUE(torch::equal(vit::gelu(x), torch::gelu(x)));
}

}  // namespace
}  // namespace vit
