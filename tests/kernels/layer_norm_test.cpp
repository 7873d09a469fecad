#include "vit/kernels/layer_norm.hpp"

#include <ATen/Parallel.h>
#include <ATen/autocast_mode.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "kernel_paths.hpp"
#include "vit/infer/precision.hpp"

namespace vit {
namespace {

// Inputs shaped like a ViT's tokens, with a mean and a scale far from 0 and 1
// per row, so both the centring and the scaling are exercised.
struct Case {
  torch::Tensor x, weight, bias;
};

Case make_case(int64_t rows, int64_t d, uint64_t seed) {
  torch::manual_seed(seed);
  Case c;
  c.x = torch::randn({rows, d}) * (torch::rand({rows, 1}) * 4 + 0.1) + torch::randn({rows, 1}) * 3;
  c.weight = torch::randn({d}) * 0.5 + 1;
  c.bias = torch::randn({d}) * 0.2;
  return c;
}

// The forward and the three gradients for `grad_out`, computed in double by
// LibTorch: the reference every precision is held to.
struct Reference {
  torch::Tensor y, dx, dweight, dbias;
};

Reference reference(const Case& c, const torch::Tensor& grad_out, double eps) {
  auto x = c.x.to(torch::kDouble).requires_grad_();
  auto w = c.weight.to(torch::kDouble).requires_grad_();
  auto b = c.bias.to(torch::kDouble).requires_grad_();
  auto y = torch::layer_norm(x, {c.x.size(-1)}, w, b, eps);
  y.backward(grad_out.to(torch::kDouble));
  return {y.detach(), x.grad(), w.grad(), b.grad()};
}

// Ours, forward and backward through autograd.
Reference ours(const Case& c, const torch::Tensor& grad_out, double eps, bool to_bf16) {
  auto x = c.x.clone().requires_grad_();
  auto w = c.weight.clone().requires_grad_();
  auto b = c.bias.clone().requires_grad_();
  auto y = vit::layer_norm(x, w, b, eps, to_bf16);
  y.backward(grad_out.to(y.scalar_type()));
  return {y.detach(), x.grad(), w.grad(), b.grad()};
}

void expect_close(const torch::Tensor& actual, const torch::Tensor& expected, double atol,
                  double rtol, const std::string& what) {
  ASSERT_EQ(actual.sizes(), expected.sizes()) << what;
  const auto a = actual.to(torch::kDouble), e = expected.to(torch::kDouble);
  const auto excess = ((a - e).abs() - (atol + rtol * e.abs())).max().item<double>();
  EXPECT_LE(excess, 0.0) << what << ": largest difference " << (a - e).abs().max().item<double>();
}

TEST(LayerNorm, OwnKernelRunsWhereTheCpuHasAvx2AndOnlyOnContiguousFloat) {
  const Case c = make_case(4, 6, 0);
  EXPECT_EQ(layer_norm_uses_own_kernel(c.x, c.weight, c.bias), testing::own_kernels_run());
  EXPECT_FALSE(
      layer_norm_uses_own_kernel(c.x.t(), c.weight.narrow(0, 0, 4), c.bias.narrow(0, 0, 4)));
  EXPECT_FALSE(layer_norm_uses_own_kernel(c.x.to(torch::kBFloat16), c.weight, c.bias));
  EXPECT_FALSE(layer_norm_uses_own_kernel(c.x.to(torch::kDouble), c.weight, c.bias));
  EXPECT_FALSE(layer_norm_uses_own_kernel(c.x, c.weight.narrow(0, 0, 5), c.bias));
  EXPECT_FALSE(layer_norm_uses_own_kernel(c.x, c.weight, torch::Tensor()));
}

// LibTorch's own float LayerNorm (then a cast to bf16 where asked),
// forward and backward: what vit::layer_norm computes where its own kernel
// does not run, and the accuracy the kernel must match where it does.
Reference libtorch_float(const Case& c, const torch::Tensor& grad_out, double eps,
                         bool to_bf16 = false) {
  auto x = c.x.clone().requires_grad_();
  auto w = c.weight.clone().requires_grad_();
  auto b = c.bias.clone().requires_grad_();
  auto y = torch::layer_norm(x, {c.x.size(-1)}, w, b, eps);
  if (to_bf16) y = y.to(torch::kBFloat16);
  y.backward(grad_out.to(y.scalar_type()));
  return {y.detach(), x.grad(), w.grad(), b.grad()};
}

// Where LibTorch's operators run: its values, forward and backward, to the bit.
void expect_libtorchs_values(const Reference& ours, const Reference& libtorch) {
  EXPECT_TRUE(ours.y.equal(libtorch.y)) << testing::kernel_path();
  EXPECT_TRUE(ours.dx.equal(libtorch.dx)) << testing::kernel_path();
  EXPECT_TRUE(ours.dweight.equal(libtorch.dweight)) << testing::kernel_path();
  EXPECT_TRUE(ours.dbias.equal(libtorch.dbias)) << testing::kernel_path();
}

double largest_error(const torch::Tensor& actual, const torch::Tensor& expected) {
  return (actual.to(torch::kDouble) - expected.to(torch::kDouble)).abs().max().item<double>();
}

// Against LibTorch's double result, ours is about as accurate as LibTorch's
// float one: its largest error is at most three times LibTorch's, or 2e-6 of
// the largest value (about 16 float steps; a wrong formula is off by whole
// units). Widths around the 8- and 16-lane vectors and the unrolled sums (two vectors), and
// row counts that do not split evenly between threads. Width 1 has its own
// test: LibTorch's double gradient there is rounding residue, not a reference.
TEST(LayerNorm, FloatIsAsAccurateAsLibTorchsForwardAndBackward) {
  const int threads = at::get_num_threads();
  at::set_num_threads(2);
  for (const int64_t d : {2, 7, 8, 9, 15, 16, 17, 31, 33, 192, 200}) {
    for (const int64_t rows : {1, 7, 1001}) {
      const Case c = make_case(rows, d, uint64_t(d * 1000 + rows));
      const auto grad_out = torch::randn({rows, d});
      const Reference r = reference(c, grad_out, 1e-6);
      const Reference o = ours(c, grad_out, 1e-6, /*to_bf16=*/false);
      const Reference l = libtorch_float(c, grad_out, 1e-6);
      const std::string at = "d " + std::to_string(d) + ", rows " + std::to_string(rows);
      EXPECT_EQ(o.y.scalar_type(), torch::kFloat);
      const std::vector<std::pair<std::string, torch::Tensor Reference::*>> parts = {
          {"y", &Reference::y},
          {"dx", &Reference::dx},
          {"dweight", &Reference::dweight},
          {"dbias", &Reference::dbias}};
      for (const auto& [name, part] : parts) {
        const double float_steps = 2e-6 * (r.*part).abs().max().item<double>();
        EXPECT_LE(largest_error(o.*part, r.*part),
                  std::max(3 * largest_error(l.*part, r.*part), float_steps))
            << name << ", " << at << " (LibTorch's float: " << largest_error(l.*part, r.*part)
            << ")";
      }
    }
  }
  at::set_num_threads(threads);
}

// bf16 out. Own kernel: the value in double rounded to bf16, or the
// neighbouring bf16 where the float result sits on the other side of a
// rounding boundary. The gradients take the bf16 gradient of the output and come back
// in float.
TEST(LayerNorm, Bf16OutputIsTheValueRoundedAndTheGradientsFloat) {
  const Case c = make_case(513, 192, 3);
  const auto grad_out = torch::randn({513, 192}).to(torch::kBFloat16);
  const Reference r = reference(c, grad_out.to(torch::kFloat), 1e-5);
  const Reference o = ours(c, grad_out, 1e-5, /*to_bf16=*/true);
  ASSERT_EQ(o.y.scalar_type(), torch::kBFloat16);
  EXPECT_EQ(o.dx.scalar_type(), torch::kFloat);
  if (!testing::own_kernels_run())
    return expect_libtorchs_values(o, libtorch_float(c, grad_out, 1e-5, /*to_bf16=*/true));
  const auto rounded = r.y.to(torch::kBFloat16);
  const double same = o.y.eq(rounded).to(torch::kDouble).mean().item<double>();
  EXPECT_GE(same, 0.995);
  // One bf16 step is 2^-7 of the value's power of two.
  expect_close(o.y, r.y, 1e-6, 1.0 / 128, "bf16 y");
  expect_close(o.dx, r.dx, 2e-5, 2e-5, "dx");
  expect_close(o.dweight, r.dweight, 1e-4, 1e-5, "dweight");
  expect_close(o.dbias, r.dbias, 1e-4, 1e-5, "dbias");
}

TEST(LayerNorm, ForLinearIsBf16UnderCpuBf16AutocastOnly) {
  const Case c = make_case(5, 32, 4);
  EXPECT_EQ(layer_norm_for_linear(c.x, c.weight, c.bias, 1e-6).scalar_type(), torch::kFloat);
  {
    AutocastScope autocast(Precision::kBf16, torch::kCPU);
    const auto y = layer_norm_for_linear(c.x, c.weight, c.bias, 1e-6);
    EXPECT_EQ(y.scalar_type(), torch::kBFloat16);
    // What LibTorch's LayerNorm followed by autocast's cast gives, within one bf16 step.
    const auto expected = torch::layer_norm(c.x, {32}, c.weight, c.bias, 1e-6);
    expect_close(y, expected, 1e-6, 1.0 / 128, "autocast");
  }
  EXPECT_EQ(layer_norm_for_linear(c.x, c.weight, c.bias, 1e-6).scalar_type(), torch::kFloat);
}

// Over one value, LayerNorm is the bias whatever x is, so x's gradient is 0:
// exactly so in the own kernel, whose centring cancels exactly (LibTorch's
// float LayerNorm leaves rounding residue, up to 1e-4 of the bias).
TEST(LayerNorm, WidthOneGivesTheBiasAndNoGradientToX) {
  const Case c = make_case(9, 1, 7);
  const auto grad_out = torch::randn({9, 1});
  const Reference o = ours(c, grad_out, 1e-6, /*to_bf16=*/false);
  expect_close(o.dbias, grad_out.sum(0), 1e-6, 1e-6, "dbias");
  if (!testing::own_kernels_run())
    return expect_libtorchs_values(o, libtorch_float(c, grad_out, 1e-6));
  EXPECT_TRUE(o.y.equal(c.bias.expand({9, 1})));
  EXPECT_TRUE(o.dx.equal(torch::zeros({9, 1})));
  EXPECT_TRUE(o.dweight.equal(torch::zeros({1})));  // dy times xhat, which is 0
}

// A constant row has no variance: eps alone scales it, and the output is the bias.
TEST(LayerNorm, ConstantRowGivesTheBiasAndNaNPropagates) {
  Case c = make_case(3, 40, 5);
  c.x[0].fill_(7.0);
  c.x[1][3] = std::numeric_limits<float>::quiet_NaN();
  const auto y = vit::layer_norm(c.x, c.weight, c.bias, 1e-5);
  expect_close(y[0], c.bias, 1e-6, 0, "constant row");
  EXPECT_TRUE(y[1].isnan().all().item<bool>());
  EXPECT_FALSE(y[2].isnan().any().item<bool>());
}

TEST(LayerNorm, StridedInputGetsTorchsValues) {
  const Case c = make_case(24, 24, 6);
  const auto strided = c.x.t();
  ASSERT_FALSE(strided.is_contiguous());
  EXPECT_TRUE(vit::layer_norm(strided, c.weight, c.bias, 1e-6)
                  .equal(torch::layer_norm(strided, {24}, c.weight, c.bias, 1e-6)));
  EXPECT_TRUE(
      vit::layer_norm(strided, c.weight, c.bias, 1e-6, /*to_bf16=*/true)
          .equal(torch::layer_norm(strided, {24}, c.weight, c.bias, 1e-6).to(torch::kBFloat16)));
}

}  // namespace
}  // namespace vit
