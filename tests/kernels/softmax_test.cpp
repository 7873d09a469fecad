#include "vit/kernels/softmax.hpp"

#include <ATen/Parallel.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <limits>
#include <stdexcept>
#include <string>

#include "kernel_paths.hpp"

namespace vit {
namespace {

// Attention scores: rows of n values spread like a ViT's q k^T.
torch::Tensor scores(int64_t rows, int64_t n, uint64_t seed) {
  torch::manual_seed(seed);
  return torch::randn({rows, n}) * 8;
}

struct ForwardBackward {
  torch::Tensor y, dx;
};

// LibTorch in double: the reference every precision is held to.
ForwardBackward reference(const torch::Tensor& x, double scale, const torch::Tensor& dy) {
  auto xd = x.to(torch::kDouble).requires_grad_();
  auto y = torch::softmax(xd * scale, /*dim=*/-1);
  y.backward(dy.to(torch::kDouble));
  return {y.detach(), xd.grad()};
}

// Ours through autograd; dy goes in the output's dtype.
ForwardBackward ours(const torch::Tensor& x, double scale, const torch::Tensor& dy,
                     torch::ScalarType out_dtype) {
  auto leaf = x.clone().requires_grad_();
  auto y = vit::scaled_softmax(leaf, scale, out_dtype);
  y.backward(dy.to(out_dtype));
  return {y.detach(), leaf.grad()};
}

// Every |actual - expected| <= bound, elementwise.
void expect_within(const torch::Tensor& actual, const torch::Tensor& expected,
                   const torch::Tensor& bound, const std::string& what) {
  ASSERT_EQ(actual.sizes(), expected.sizes()) << what;
  const auto error = (actual.to(torch::kDouble) - expected.to(torch::kDouble)).abs();
  EXPECT_LE((error - bound).max().item<double>(), 0.0)
      << what << ": largest difference " << error.max().item<double>();
}

// How far float probabilities may lie from the exact ones: 1e-6 of their
// value (the exp's and the normalisation's float error), plus the float
// rounding of the exponent scale x - max, which grows with its size |ln y|.
torch::Tensor float_bound(const torch::Tensor& exact) {
  return exact * (1e-6 + 1.2e-7 * exact.clamp_min(1e-300).log().abs()) + 1e-38;
}

TEST(ScaledSoftmax, OwnKernelRunsWhereTheCpuHasAvx2AndOnlyOnContiguousFloatOrBf16) {
  const auto x = torch::randn({4, 6});
  EXPECT_EQ(scaled_softmax_uses_own_kernel(x, torch::kFloat), testing::own_kernels_run());
  EXPECT_EQ(scaled_softmax_uses_own_kernel(x, torch::kBFloat16), testing::own_kernels_run());
  EXPECT_EQ(scaled_softmax_uses_own_kernel(x.to(torch::kBFloat16), torch::kFloat),
            testing::own_kernels_run());
  EXPECT_FALSE(scaled_softmax_uses_own_kernel(x.t(), torch::kFloat));
  EXPECT_FALSE(scaled_softmax_uses_own_kernel(x.to(torch::kDouble), torch::kFloat));
  EXPECT_FALSE(scaled_softmax_uses_own_kernel(x.to(torch::kHalf), torch::kFloat));
  EXPECT_FALSE(scaled_softmax_uses_own_kernel(x, torch::kHalf));
}

// fp32 in and out, against double: the probabilities within float_bound, the gradient within 2e-6
// of the gradient's scale (the centring dy - sum(y dy) cancels). Row lengths around the 8- and
// 16-lane vectors, a negative scale, and row counts that split unevenly between threads.
TEST(ScaledSoftmax, FloatMatchesDoubleForwardAndBackward) {
  const int threads = at::get_num_threads();
  at::set_num_threads(2);
  for (const int64_t n : {1, 2, 7, 8, 9, 15, 16, 17, 65, 197}) {
    for (const int64_t rows : {1, 7, 1001}) {
      for (const double scale : {0.125, -0.5}) {
        const auto x = scores(rows, n, uint64_t(n * 1000 + rows));
        const auto dy = torch::randn({rows, n});
        const auto r = reference(x, scale, dy);
        const auto o = ours(x, scale, dy, torch::kFloat);
        const std::string at = "n " + std::to_string(n) + ", rows " + std::to_string(rows) +
                               ", scale " + std::to_string(scale);
        ASSERT_EQ(o.y.scalar_type(), torch::kFloat);
        ASSERT_EQ(o.dx.scalar_type(), torch::kFloat);
        expect_within(o.y, r.y, float_bound(r.y), "y, " + at);
        const double grad_scale = std::abs(scale) * dy.abs().max().item<double>();
        expect_within(o.dx, r.dx, torch::full_like(r.dx, 2e-6 * grad_scale), "dx, " + at);
      }
    }
  }
  at::set_num_threads(threads);
}

// bf16 probabilities are the exact value rounded to the nearest bf16: within
// half a bf16 step (2^-8 of the value's power of two) and a little float
// error. A store that truncated would be off by up to a whole step.
TEST(ScaledSoftmax, Bf16ProbabilitiesAreTheValueRounded) {
  const auto x = scores(777, 65, 11);
  const auto r = reference(x, 0.125, torch::zeros({777, 65}));
  const auto y = vit::scaled_softmax(x, 0.125, torch::kBFloat16);
  ASSERT_EQ(y.scalar_type(), torch::kBFloat16);
  expect_within(y, r.y, r.y * (1.0 / 256 + 1e-6) + 1e-38, "bf16 y");
  const double same = y.eq(r.y.to(torch::kBFloat16)).to(torch::kDouble).mean().item<double>();
  EXPECT_GE(same, 0.995);
}

// bf16 scores in: the same as widening them to float first (exactly: bf16
// widens without rounding). The gradient comes back in bf16, within what
// computing it from bf16 probabilities and gradients allows: each error of
// 2^-8 in y or in the centre sum(y dy), plus the rounding of dx itself.
TEST(ScaledSoftmax, Bf16ScoresGiveTheFloatResultAndABf16Gradient) {
  const auto x = scores(300, 65, 12).to(torch::kBFloat16);
  const auto widened = vit::scaled_softmax(x.to(torch::kFloat), 0.125, torch::kFloat);
  EXPECT_TRUE(vit::scaled_softmax(x, 0.125, torch::kFloat).equal(widened));
  EXPECT_TRUE(vit::scaled_softmax(x, 0.125, torch::kBFloat16).equal(widened.to(torch::kBFloat16)));

  const auto dy = torch::randn({300, 65}).to(torch::kBFloat16);
  const auto r = reference(x, 0.125, dy);
  const auto o = ours(x, 0.125, dy, torch::kBFloat16);
  ASSERT_EQ(o.dx.scalar_type(), torch::kBFloat16);
  const double dy_max = dy.abs().max().item<double>();
  const auto bound = 0.125 * r.y * (3 * dy_max / 128) + r.dx.abs() / 256 + 1e-30;
  expect_within(o.dx, r.dx, bound, "bf16 dx");
}

// Large scores neither overflow nor underflow (the row's maximum is taken
// out first), a row of equal scores is uniform, and a NaN spoils its own row
// only.
TEST(ScaledSoftmax, LargeScoresEqualScoresAndNaN) {
  auto x = scores(5, 33, 13);
  x[0] += 1e4;
  x[1].fill_(-3.0);
  x[2][5] = std::numeric_limits<float>::quiet_NaN();
  x[4] -= 1e4;
  const auto y = vit::scaled_softmax(x, 1.0, torch::kFloat);
  const auto r = reference(x, 1.0, torch::zeros({5, 33}));
  expect_within(y[0], r.y[0], float_bound(r.y[0]), "large scores");
  expect_within(y[4], r.y[4], float_bound(r.y[4]), "large negative scores");
  expect_within(y[1], torch::full({33}, 1.0 / 33), torch::full({33}, 1e-7), "equal scores");
  EXPECT_TRUE(y[2].isnan().all().item<bool>());
  EXPECT_FALSE(y[3].isnan().any().item<bool>());
  expect_within(y[3], r.y[3], float_bound(r.y[3]), "the row after the NaN");
}

// Without grad mode the kernel runs without a graph and gives the same values.
TEST(ScaledSoftmax, NoGraphWithoutGradModeAndTheSameValues) {
  const auto x = scores(10, 20, 14).requires_grad_();
  const auto with_graph = vit::scaled_softmax(x, 0.3, torch::kFloat);
  EXPECT_TRUE(with_graph.requires_grad());
  torch::NoGradGuard no_grad;
  const auto without = vit::scaled_softmax(x, 0.3, torch::kFloat);
  EXPECT_FALSE(without.requires_grad());
  EXPECT_TRUE(without.equal(with_graph.detach()));
}

TEST(ScaledSoftmax, StridedInputGetsTorchsValues) {
  const auto x = scores(24, 24, 15);
  const auto strided = x.t();
  ASSERT_FALSE(strided.is_contiguous());
  EXPECT_TRUE(vit::scaled_softmax(strided, 0.25, torch::kFloat)
                  .equal(torch::softmax(strided * 0.25, -1, torch::kFloat)));
  EXPECT_TRUE(vit::scaled_softmax(strided, 0.25, torch::kBFloat16)
                  .equal(torch::softmax(strided * 0.25, -1, torch::kFloat).to(torch::kBFloat16)));
}

TEST(ScaledSoftmax, EmptyRowsAndABadOutputTypeAreHandled) {
  EXPECT_EQ(vit::scaled_softmax(torch::zeros({3, 0}), 1.0, torch::kFloat).sizes(),
            (std::vector<int64_t>{3, 0}));
  EXPECT_EQ(vit::scaled_softmax(torch::zeros({0, 5}), 1.0, torch::kBFloat16).numel(), 0);
  EXPECT_THROW(vit::scaled_softmax(torch::zeros({2, 2}), 1.0, torch::kHalf), std::invalid_argument);
}

}  // namespace
}  // namespace vit
