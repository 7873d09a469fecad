// The residual add and LayerNorm fused on GPUs (kernels/gpu_residual_norm):
// elsewhere LibTorch's add and norm (checked on the CPU), and on a GPU the
// kernels against the same arithmetic in double, forward and backward
// (CudaResidualNorm; skipped without a CUDA device, as in CI).
#include "vit/kernels/gpu_residual_norm.hpp"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <optional>
#include <string>
#include <vector>

#include "tensor_values.hpp"
#include "vit/build_features.hpp"
#include "vit/infer/precision.hpp"

#if VIT_WITH_CUDA
#include "../../src/kernels/cuda/residual_layer_norm.hpp"
#endif

namespace vit::gpu_residual_norm_test {
namespace {

constexpr double kEps = 1e-6;

struct Inputs {
  torch::Tensor x, y, weight, bias;  // y undefined: no add
  torch::Tensor dz, dn;              // the upstream gradients; dz undefined: z feeds nothing else
};

// Rounded to `dtype` once, so that both sides read the same values. A mean
// far from 0 and a spread unlike 1, where rounding x_hat would show.
Inputs make_inputs(const std::vector<int64_t>& shape, torch::ScalarType dtype, bool add,
                   bool stream_gradient) {
  torch::manual_seed(11);
  const int64_t d = shape.back();
  Inputs in;
  in.x = (torch::randn(shape) * 3 + 2).to(dtype);
  if (add) in.y = torch::randn(shape).to(dtype);
  in.weight = (torch::randn({d}) * 0.5 + 1).to(dtype);
  in.bias = torch::randn({d}).to(dtype);
  in.dn = torch::randn(shape).to(dtype);
  if (stream_gradient) in.dz = torch::randn(shape).to(dtype);
  return in;
}

struct Results {
  torch::Tensor z, n, dx, dy, dweight, dbias;
};

using Op = ResidualAndNorm (*)(const torch::Tensor&, const torch::Tensor&, const torch::Tensor&,
                               const torch::Tensor&, double);

// op on `device` in the inputs' dtype (or `as`), backward from dz and dn.
Results run(Op op, const Inputs& in, c10::Device device,
            std::optional<torch::ScalarType> as = std::nullopt) {
  const auto leaf = [&](const torch::Tensor& t) {
    if (!t.defined()) return t;
    return t.to(device, as.value_or(t.scalar_type())).detach().requires_grad_();
  };
  const auto upstream = [&](const torch::Tensor& t) {
    return t.defined() ? t.to(device, as.value_or(t.scalar_type())) : t;
  };
  auto x = leaf(in.x), y = leaf(in.y), weight = leaf(in.weight), bias = leaf(in.bias);
  const auto out = op(x, y, weight, bias, kEps);
  auto loss = (out.normalized * upstream(in.dn)).sum();
  if (in.dz.defined()) loss = loss + (out.sum * upstream(in.dz)).sum();
  loss.backward();
  return {out.sum.detach(),           out.normalized.detach(), x.grad(),
          y.defined() ? y.grad() : y, weight.grad(),           bias.grad()};
}

ResidualAndNorm libtorch_add_and_norm(const torch::Tensor& x, const torch::Tensor& y,
                                      const torch::Tensor& weight, const torch::Tensor& bias,
                                      double eps) {
  auto z = y.defined() ? x + y : x;
  return {z, torch::layer_norm(z, {z.size(-1)}, weight, bias, eps)};
}

void expect_near(const Results& got, const Results& want, double tolerance,
                 const std::string& where) {
  const std::vector<std::pair<const char*, std::pair<torch::Tensor, torch::Tensor>>> pairs = {
      {"z", {got.z, want.z}},
      {"n", {got.n, want.n}},
      {"dx", {got.dx, want.dx}},
      {"dy", {got.dy, want.dy}},
      {"dweight", {got.dweight, want.dweight}},
      {"dbias", {got.dbias, want.dbias}}};
  for (const auto& [name, p] : pairs) {
    ASSERT_EQ(p.first.defined(), p.second.defined()) << name << ", " << where;
    if (!p.first.defined()) continue;
    EXPECT_EQ(p.first.sizes(), p.second.sizes()) << name << ", " << where;
    EXPECT_LT(testing::relative_error(p.first, p.second), tolerance) << name << ", " << where;
  }
}

TEST(GpuResidualNorm, ElsewhereIsLibTorchsAddAndNorm) {
  for (const bool add : {true, false}) {
    const auto in = make_inputs({3, 5, 16}, torch::kFloat, add, /*stream_gradient=*/add);
    EXPECT_FALSE(
        gpu_residual_norm_applies(in.x.clone().requires_grad_(), in.weight, in.bias, in.y));
    const auto got = run(gpu_residual_then_norm, in, torch::kCPU);
    const auto want = run(libtorch_add_and_norm, in, torch::kCPU);
    expect_near(got, want, 1e-6, add ? "with y" : "without y");
  }
  // Without y, z is x itself, not a copy.
  const auto x = torch::randn({2, 8});
  EXPECT_TRUE(
      gpu_residual_then_norm(x, {}, torch::ones({8}), torch::zeros({8}), kEps).sum.is_same(x));
}

// The autograd functions that run the kernels on a GPU, here with LibTorch's
// ops doing the kernels' arithmetic: the backward's formulas, and which
// gradients go where (x's and y's the same, none for an unused output).
TEST(GpuResidualNorm, ItsAutogradFunctionsGiveLibTorchsGradients) {
  for (const auto dtype : {torch::kFloat, torch::kBFloat16})
    for (const bool add : {true, false})
      for (const bool stream_gradient : {true, false}) {
        const std::string where = std::string(c10::toString(dtype)) + (add ? ", y" : "") +
                                  (stream_gradient ? ", dz" : "");
        const auto in = make_inputs({3, 5, 24}, dtype, add, stream_gradient);
        const auto got = run(detail::residual_then_norm_functions, in, torch::kCPU);
        const auto want = run(libtorch_add_and_norm, in, torch::kCPU, torch::kDouble);
        expect_near(got, want, dtype == torch::kFloat ? 1e-5 : 1e-2, where);
      }
}

// The kernels' host functions, which run on the CPU wherever LibTorch has CUDA.
TEST(CudaResidualNorm, TakesWholeVectorRowsUpTo1024AndFillsTheGpu) {
#if VIT_WITH_CUDA
  EXPECT_TRUE(cuda::residual_layer_norm_fits(8));
  EXPECT_TRUE(cuda::residual_layer_norm_fits(384));
  EXPECT_TRUE(cuda::residual_layer_norm_fits(1024));
  EXPECT_FALSE(cuda::residual_layer_norm_fits(0));
  EXPECT_FALSE(cuda::residual_layer_norm_fits(100));   // not whole 16-byte vectors
  EXPECT_FALSE(cuda::residual_layer_norm_fits(1032));  // more than a warp's registers hold
  // ViT-S/16 at batch 256 (50,432 rows) on 132 SMs: four blocks a SM; few
  // rows: one warp a row at most; no SM count: one block.
  EXPECT_EQ(cuda::residual_layer_norm_backward_blocks(50432, 132), 528);
  EXPECT_EQ(cuda::residual_layer_norm_backward_blocks(20, 132), 3);
  EXPECT_EQ(cuda::residual_layer_norm_backward_blocks(5, 0), 1);
#else
  GTEST_SKIP() << "this LibTorch has no CUDA, so vit's CUDA kernels are not built";
#endif
}

// Every width class the kernels have (1 to 4 vectors a lane, a last one
// partly filled: 520 = 65 vectors), rows that leave a block's warps idle,
// with and without y and the stream's own gradient, bf16 and fp16: within 1%
// of double, z to the bit as LibTorch's add rounds it, the weight's sums the
// same bits on a second run.
TEST(CudaResidualNorm, MatchesTheArithmeticInDoubleForwardAndBackward) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "needs a CUDA device";
  const c10::Device cuda(c10::kCUDA, 0);
  const std::vector<std::vector<int64_t>> shapes = {
      {8, 65, 384}, {3, 101, 256}, {2, 9, 1024}, {5, 13, 520}, {1, 1, 8}};
  for (const auto dtype : {torch::kBFloat16, torch::kHalf})
    for (const auto& shape : shapes)
      for (const bool add : {true, false})
        for (const bool stream_gradient : {true, false}) {
          const std::string where = std::string(c10::toString(dtype)) + ", " +
                                    c10::str(c10::IntArrayRef(shape)) + (add ? ", y" : "") +
                                    (stream_gradient ? ", dz" : "");
          const auto in = make_inputs(shape, dtype, add, stream_gradient);
          const auto x = in.x.to(cuda).requires_grad_();
          ASSERT_TRUE(gpu_residual_norm_applies(x, in.weight.to(cuda), in.bias.to(cuda),
                                                add ? in.y.to(cuda) : in.y))
              << where;
          const auto got = run(gpu_residual_then_norm, in, cuda);
          expect_near(got, run(libtorch_add_and_norm, in, torch::kCPU, torch::kDouble), 1e-2,
                      where);
          if (add) {
            EXPECT_TRUE(got.z.equal(in.x.to(cuda) + in.y.to(cuda))) << where;
          }
          EXPECT_TRUE(got.dweight.equal(run(gpu_residual_then_norm, in, cuda).dweight)) << where;
        }
}

// Where the kernels do not apply, the same function runs LibTorch's: fp32,
// no gradients, under autocast, a width of 100, an unaligned view.
TEST(CudaResidualNorm, AppliesOnlyTo16BitRowsWithGradientsOutsideAutocast) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "needs a CUDA device";
  const auto options = torch::TensorOptions(c10::Device(c10::kCUDA, 0)).dtype(torch::kBFloat16);
  const auto x = torch::randn({4, 64}, options).requires_grad_();
  const auto w = torch::randn({64}, options), b = torch::randn({64}, options);
  EXPECT_TRUE(gpu_residual_norm_applies(x, w, b));
  EXPECT_FALSE(
      gpu_residual_norm_applies(x.to(torch::kFloat), w.to(torch::kFloat), b.to(torch::kFloat)));
  const auto wide = torch::randn({4, 100}, options).requires_grad_();
  EXPECT_FALSE(
      gpu_residual_norm_applies(wide, torch::randn({100}, options), torch::randn({100}, options)));
  const auto shifted = torch::randn({4 * 64 + 1}, options).narrow(0, 1, 4 * 64).view({4, 64});
  EXPECT_FALSE(gpu_residual_norm_applies(shifted.detach().requires_grad_(), w, b));
  EXPECT_FALSE(
      gpu_residual_norm_applies(x, w, b, torch::randn({4, 64}, options.dtype(torch::kHalf))));
  {
    AutocastScope autocast(Precision::kBf16, c10::Device(c10::kCUDA, 0));
    EXPECT_FALSE(gpu_residual_norm_applies(x, w, b));
  }
  torch::NoGradGuard no_grad;
  EXPECT_FALSE(gpu_residual_norm_applies(x, w, b));
}

}  // namespace
}  // namespace vit::gpu_residual_norm_test
