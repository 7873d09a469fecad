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

// gelu_with_bias against the unfused composition gelu(h + bias), forward and
// backward, h (rows, d) in `dtype` and the bias fp32.
struct BiasedValues {
  torch::Tensor y, dh, dbias;
};

BiasedValues run_biased_gelu(const torch::Tensor& h, const torch::Tensor& bias,
                             const torch::Tensor& dy, bool fused) {
  auto input = h.clone().requires_grad_();
  auto b = bias.clone().requires_grad_();
  auto y = fused ? gelu_with_bias(input, b) : vit::gelu(input + b.to(h.scalar_type()));
  y.backward(dy);
  return {y.detach(), input.grad(), b.grad()};
}

TEST(GeluWithBias, OwnKernelRunsOnlyForAContiguousFloatBiasOfTheRowsSize) {
  const auto h = torch::randn({4, 6}), bias = torch::randn({6});
  EXPECT_EQ(gelu_with_bias_uses_own_kernel(bias, h), testing::own_kernels_run());
  EXPECT_EQ(gelu_with_bias_uses_own_kernel(bias), testing::own_kernels_run());
  EXPECT_EQ(gelu_with_bias_uses_own_kernel(bias, h.to(torch::kBFloat16)),
            testing::own_kernels_run());
  EXPECT_FALSE(gelu_with_bias_uses_own_kernel(bias.to(torch::kBFloat16), h));
  EXPECT_FALSE(gelu_with_bias_uses_own_kernel(torch::randn({5}), h));
  EXPECT_FALSE(gelu_with_bias_uses_own_kernel(torch::randn({12}).slice(0, 0, 12, 2), h));
  EXPECT_FALSE(gelu_with_bias_uses_own_kernel(bias, h.t().contiguous().t()));
  EXPECT_FALSE(gelu_with_bias_uses_own_kernel(torch::Tensor(), h));
}

// fp32: the bias is added in float, then the GELU of the sum, so forward and
// h's gradient equal the composition's to float rounding; the bias's
// gradient is the sum of h's over the rows, in blocks. Row lengths around
// the 8- and 16-lane vectors, and more rows than the parallel tasks hold.
TEST(GeluWithBias, FloatMatchesTheUnfusedComposition) {
  torch::manual_seed(3);
  for (const int64_t d : {1, 7, 16, 17, 768}) {
    const int64_t rows = d == 768 ? 301 : 1000;
    const auto h = 3 * torch::randn({rows, d}), bias = torch::randn({d});
    const auto dy = torch::randn({rows, d});
    const BiasedValues ours = run_biased_gelu(h, bias, dy, true),
                       theirs = run_biased_gelu(h, bias, dy, false);
    EXPECT_TRUE(torch::allclose(ours.y, theirs.y, 1e-6, 1e-6)) << "d = " << d;
    EXPECT_TRUE(torch::allclose(ours.dh, theirs.dh, 1e-5, 1e-6)) << "d = " << d;
    EXPECT_TRUE(torch::allclose(ours.dbias, theirs.dbias, 1e-5, 1e-4)) << "d = " << d;
    EXPECT_TRUE(ours.dbias.allclose(ours.dh.sum(0), 1e-5, 1e-4)) << "d = " << d;
  }
}

// bf16 h: the sum h + bias is taken in float (the composition rounds the
// bias to bf16 first), so values are within a bf16 step or two of it; the
// bias's gradient is the fp32 sum of h's bf16 gradient.
TEST(GeluWithBias, Bf16StaysWithinBf16StepsOfTheComposition) {
  torch::manual_seed(4);
  const int64_t rows = 513, d = 37;
  const auto h = (3 * torch::randn({rows, d})).to(torch::kBFloat16);
  const auto bias = torch::randn({d}), dy = torch::randn({rows, d}).to(torch::kBFloat16);
  const BiasedValues ours = run_biased_gelu(h, bias, dy, true),
                     theirs = run_biased_gelu(h, bias, dy, false);
  if (!testing::own_kernels_run()) {  // LibTorch's composition on both sides
    EXPECT_TRUE(ours.y.equal(theirs.y) && ours.dh.equal(theirs.dh) &&
                ours.dbias.equal(theirs.dbias))
        << testing::kernel_path();
    return;
  }
  EXPECT_EQ(ours.y.scalar_type(), torch::kBFloat16);
  EXPECT_EQ(ours.dh.scalar_type(), torch::kBFloat16);
  EXPECT_EQ(ours.dbias.scalar_type(), torch::kFloat);
  const auto near = [](const torch::Tensor& a, const torch::Tensor& b) {
    const auto a64 = a.to(torch::kDouble), b64 = b.to(torch::kDouble);
    return ((a64 - b64).abs() - (b64.abs() / 64 + 0.02)).max().item<double>() <= 0;
  };
  EXPECT_TRUE(near(ours.y, theirs.y));
  EXPECT_TRUE(near(ours.dh, theirs.dh));
  EXPECT_TRUE(ours.dbias.allclose(ours.dh.to(torch::kFloat).sum(0), 1e-5, 1e-4));
  EXPECT_TRUE(ours.dbias.allclose(theirs.dbias, 0.02, 0.1)) << ours.dbias - theirs.dbias;
}

// bf16 h, with the gradient from the slope the forward kept in bf16: two
// roundings (the slope, then dy slope), so within two bf16 steps (2 x 2^-8
// relative) of dy times the exact derivative at h + bias, plus the float
// error of the kernel's erf. Values across the whole curve, the tails too.
TEST(GeluWithBias, Bf16GradientIsWithinTwoStepsOfTheExactDerivative) {
  if (!testing::own_kernels_run()) GTEST_SKIP() << testing::kernel_path();
  torch::manual_seed(5);
  const int64_t rows = 2001, d = 10;
  const auto h = torch::linspace(-12.0, 12.0, rows * d).view({rows, d}).to(torch::kBFloat16);
  const auto bias = 0.1 * torch::randn({d}), dy = torch::randn({rows, d}).to(torch::kBFloat16);
  const auto dh = run_biased_gelu(h, bias, dy, true).dh.to(torch::kDouble);
  const auto x = h.to(torch::kDouble) + bias.to(torch::kDouble);
  const auto exact = exact_gradient_of(x, dy);
  const auto bound = exact.abs() / 128 + 4e-7 * (1 + x.abs()) * dy.to(torch::kDouble).abs();
  EXPECT_LE(((dh - exact).abs() - bound).max().item<double>(), 0.0);
}

// Without a graph (evaluation), the same values as with one.
TEST(GeluWithBias, WithoutGradientsGivesTheSameOutput) {
  const auto h = torch::randn({9, 20}), bias = torch::randn({20});
  const auto with_graph = run_biased_gelu(h, bias, torch::ones_like(h), true).y;
  torch::NoGradGuard no_grad;
  EXPECT_TRUE(gelu_with_bias(h, bias).equal(with_graph));
}

// A strided h or a bf16 bias takes LibTorch's path: torch::gelu(h + bias).
TEST(GeluWithBias, OtherInputsGetTorchsComposition) {
  torch::manual_seed(5);
  const auto h = torch::randn({17, 33}).t(), bias = torch::randn({17});
  EXPECT_TRUE(gelu_with_bias(h, bias).equal(torch::gelu(h + bias)));
  const auto h16 = torch::randn({5, 8}).to(torch::kBFloat16);
  const auto bias16 = torch::randn({8}).to(torch::kBFloat16);
  EXPECT_TRUE(gelu_with_bias(h16, bias16).equal(torch::gelu(h16 + bias16)));
}

}  // namespace
}  // namespace vit
