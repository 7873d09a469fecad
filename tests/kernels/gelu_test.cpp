#include "vit/kernels/gelu.hpp"

#include <cmath>
#include <limits>

#include <gtest/gtest.h>
#include <torch/torch.h>

namespace vit {
namespace {

// x Phi(x) and its derivative Phi(x) + x phi(x), in double.
double exact_gelu(double x) {
  return 0.5 * x * std::erfc(-x / std::sqrt(2.0));
}

double exact_slope(double x) {
  return 0.5 * std::erfc(-x / std::sqrt(2.0)) + x * std::exp(-0.5 * x * x) / std::sqrt(2.0 * M_PI);
}

bool cpu_has_avx512() {
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512vl");
}

// Every bf16 value in [-limit, limit], as float.
torch::Tensor all_bf16_values_within(float limit) {
  const auto bits = torch::arange(0, 1 << 16, torch::kInt32).to(torch::kInt16);
  const auto values = bits.view(torch::kBFloat16).to(torch::kFloat);
  return values.masked_select(values.abs() <= limit);
}

TEST(Gelu, OwnKernelRunsWhereTheCpuHasAvx512AndOnlyOnContiguousFloatOrBf16) {
  const auto x = torch::randn({4, 6});
  EXPECT_EQ(gelu_uses_own_kernel(x), cpu_has_avx512());
  EXPECT_EQ(gelu_uses_own_kernel(x.to(torch::kBFloat16)), cpu_has_avx512());
  EXPECT_FALSE(gelu_uses_own_kernel(x.t()));
  EXPECT_FALSE(gelu_uses_own_kernel(x.to(torch::kDouble)));
  EXPECT_FALSE(gelu_uses_own_kernel(x.to(torch::kHalf)));
}

// Within 2e-7 (1 + |x|) of the exact value in float: the erf approximation's
// 1.5e-7 and float rounding. Sizes around the 16-lane vectors and across the
// parallel chunks check the tails.
TEST(Gelu, FloatMatchesTheExactFormula) {
  for (const int64_t n : {1, 15, 16, 17, 100003}) {
    const auto x = torch::linspace(-12.0, 12.0, n == 1 ? 2 : n).narrow(0, 0, n).contiguous();
    const auto y = vit::gelu(x).to(torch::kDouble);
    const auto xd = x.to(torch::kDouble);
    const auto* xs = xd.data_ptr<double>();
    const auto* ys = y.data_ptr<double>();
    double worst = 0;
    for (int64_t i = 0; i < n; ++i)
      worst = std::max(worst, std::abs(ys[i] - exact_gelu(xs[i])) / (1.0 + std::abs(xs[i])));
    EXPECT_LT(worst, 2e-7) << "n = " << n;
  }
}

// Every bf16 input in [-12, 12]: the output is the exact value rounded to
// bf16, or one bf16 step from it where the float result lies that close to a
// rounding boundary (or the left tail's error exceeds a step of a tiny value).
TEST(Gelu, Bf16IsTheExactValueRounded) {
  const auto x = all_bf16_values_within(12.0f);
  ASSERT_GT(x.numel(), 10000);
  const auto y = vit::gelu(x.to(torch::kBFloat16)).to(torch::kDouble);
  const auto xd = x.to(torch::kDouble);
  const auto* xs = xd.data_ptr<double>();
  const auto* ys = y.data_ptr<double>();
  int64_t rounded_exactly = 0;
  for (int64_t i = 0; i < x.numel(); ++i) {
    const double exact = exact_gelu(xs[i]);
    const double rounded = static_cast<float>(c10::BFloat16(static_cast<float>(exact)));
    rounded_exactly += ys[i] == rounded;
    EXPECT_LE(std::abs(ys[i] - exact), std::abs(exact) / 256 + 2e-7 * (1 + std::abs(xs[i])))
        << "x = " << xs[i];
  }
  EXPECT_GT(rounded_exactly, 0.995 * x.numel());
}

TEST(Gelu, GradientMatchesTheExactDerivative) {
  for (const auto dtype : {torch::kFloat, torch::kBFloat16}) {
    const auto x = torch::linspace(-12.0, 12.0, 20011).to(dtype).requires_grad_();
    const auto dy = torch::randn({20011}).to(dtype);
    vit::gelu(x).backward(dy);
    ASSERT_TRUE(x.grad().defined());
    const auto xd = x.detach().to(torch::kDouble), dyd = dy.to(torch::kDouble),
               dxd = x.grad().to(torch::kDouble);
    const double step = dtype == torch::kFloat ? 0 : 1.0 / 128;  // dy and the result round in bf16
    for (int64_t i = 0; i < x.numel(); ++i) {
      const double xi = xd[i].item<double>(), dyi = dyd[i].item<double>();
      const double exact = dyi * exact_slope(xi);
      EXPECT_LE(std::abs(dxd[i].item<double>() - exact),
                step * std::abs(exact) + 4e-7 * (1 + std::abs(xi)) * std::abs(dyi))
          << "x = " << xi << " dtype " << dtype;
    }
  }
}

// NaN and the infinities give the limits of x Phi(x) where they exist
// (+inf -> +inf) and NaN where they do not (-inf: -inf * 0), forward and
// backward, so that a diverging step is still caught. Fixed values rather
// than torch::gelu's: LibTorch 1.13 gives +inf at +inf, 2.15 gives NaN.
TEST(Gelu, NonFiniteValuesGiveTheLimitOrNaN) {
  const float inf = std::numeric_limits<float>::infinity(), nan = std::nanf("");
  const auto x = torch::tensor({nan, inf, -inf, 0.0f, -30.0f, 30.0f});
  const auto expected_y = torch::tensor({nan, inf, nan, 0.0f, 0.0f, 30.0f});
  const auto expected_slope = torch::tensor({nan, nan, nan, 0.5f, 0.0f, 1.0f});
  for (const auto dtype : {torch::kFloat, torch::kBFloat16}) {
    const auto input = x.to(dtype).clone().requires_grad_();
    const auto y = vit::gelu(input);
    y.sum().backward();
    EXPECT_TRUE(torch::allclose(y.to(torch::kFloat), expected_y, /*rtol=*/0, /*atol=*/0,
                                /*equal_nan=*/true))
        << y;
    EXPECT_TRUE(torch::allclose(input.grad().to(torch::kFloat), expected_slope, /*rtol=*/0,
                                /*atol=*/1e-30, /*equal_nan=*/true))
        << input.grad();
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
