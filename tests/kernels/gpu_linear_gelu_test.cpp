// The MLP's first layer and its GELU on GPUs (kernels/gpu_linear_gelu):
// elsewhere LibTorch's linear and gelu (checked on the CPU), its autograd
// function with LibTorch doing the kernels' arithmetic (on the CPU), and on
// a GPU the kernels against the same arithmetic in double, forward and
// backward (CudaLinearGelu; skipped without a CUDA device, as in CI).
#include "vit/kernels/gpu_linear_gelu.hpp"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "tensor_values.hpp"
#include "vit/build_features.hpp"
#include "vit/infer/precision.hpp"

#if VIT_WITH_CUDA
#include "../../src/kernels/cuda/gelu.hpp"
#endif

namespace vit::gpu_linear_gelu_test {
namespace {

// VIT_CUDA_GELU set (or unset) for one scope, and put back after it.
class GeluEnvironment {
 public:
  explicit GeluEnvironment(const char* value) {
    if (const char* before = std::getenv(kName)) before_ = before;
    if (value != nullptr)
      setenv(kName, value, 1);
    else
      unsetenv(kName);
  }
  ~GeluEnvironment() {
    if (before_)
      setenv(kName, before_->c_str(), 1);
    else
      unsetenv(kName);
  }
  GeluEnvironment(const GeluEnvironment&) = delete;
  GeluEnvironment& operator=(const GeluEnvironment&) = delete;

 private:
  static constexpr const char* kName = "VIT_CUDA_GELU";
  std::optional<std::string> before_;
};

struct Inputs {
  torch::Tensor x, weight, bias, da;  // da: the upstream gradient of a
};

// Rounded to `dtype` once, so that both sides read the same values; h
// spread over GELU's bend and both tails.
Inputs make_inputs(const std::vector<int64_t>& x_shape, int64_t out, torch::ScalarType dtype) {
  torch::manual_seed(5);
  const int64_t in = x_shape.back();
  auto a_shape = x_shape;
  a_shape.back() = out;
  return {torch::randn(x_shape).to(dtype),
          (torch::randn({out, in}) * (2.0 / std::sqrt(static_cast<double>(in)))).to(dtype),
          (torch::randn({out}) * 0.5).to(dtype), torch::randn(a_shape).to(dtype)};
}

struct Results {
  torch::Tensor a, dx, dweight, dbias;
};

using Op = torch::Tensor (*)(const torch::Tensor&, const torch::Tensor&, const torch::Tensor&);

// op on `device` in the inputs' dtype (or `as`), backward from da.
Results run(Op op, const Inputs& in, c10::Device device,
            std::optional<torch::ScalarType> as = std::nullopt) {
  const auto on = [&](const torch::Tensor& t) {
    return t.to(device, as.value_or(t.scalar_type())).detach();
  };
  auto x = on(in.x).requires_grad_(), weight = on(in.weight).requires_grad_(),
       bias = on(in.bias).requires_grad_();
  const auto a = op(x, weight, bias);
  a.backward(on(in.da));
  return {a.detach(), x.grad(), weight.grad(), bias.grad()};
}

torch::Tensor libtorch_linear_gelu(const torch::Tensor& x, const torch::Tensor& weight,
                                   const torch::Tensor& bias) {
  return torch::gelu(at::linear(x, weight, bias));
}

void expect_near(const Results& got, const Results& want, double tolerance,
                 const std::string& where) {
  const std::vector<std::pair<const char*, std::pair<torch::Tensor, torch::Tensor>>> pairs = {
      {"a", {got.a, want.a}},
      {"dx", {got.dx, want.dx}},
      {"dweight", {got.dweight, want.dweight}},
      {"dbias", {got.dbias, want.dbias}}};
  for (const auto& [name, p] : pairs) {
    ASSERT_TRUE(p.first.defined()) << name << ", " << where;
    EXPECT_EQ(p.first.sizes(), p.second.sizes()) << name << ", " << where;
    EXPECT_LT(testing::relative_error(p.first, p.second), tolerance) << name << ", " << where;
  }
}

TEST(GpuLinearGelu, TheEnvironmentAsksForTheKernelsWithOwn) {
  {
    GeluEnvironment env(nullptr);
    EXPECT_FALSE(detail::own_cuda_gelu_requested());
  }
  {
    GeluEnvironment env("own");
    EXPECT_TRUE(detail::own_cuda_gelu_requested());
  }
  for (const char* other : {"", "1", "libtorch", "Own"}) {
    GeluEnvironment env(other);
    EXPECT_FALSE(detail::own_cuda_gelu_requested()) << "'" << other << "'";
  }
}

TEST(GpuLinearGelu, ElsewhereIsLibTorchsLinearAndGelu) {
  GeluEnvironment env("own");  // asked for, and still LibTorch's on the CPU
  const auto in = make_inputs({3, 5, 16}, 24, torch::kFloat);
  EXPECT_FALSE(gpu_linear_gelu_applies(in.x.clone().requires_grad_(), in.weight, in.bias));
  const auto got = run(gpu_linear_gelu, in, torch::kCPU);
  const auto want = run(libtorch_linear_gelu, in, torch::kCPU);
  expect_near(got, want, 1e-6, "fp32 on the CPU");
}

// The autograd function that runs the kernels on a GPU, here with
// LibTorch's ops doing the kernels' arithmetic: the backward's formula,
// the bias's sum, and where each gradient goes.
TEST(GpuLinearGelu, ItsAutogradFunctionGivesLibTorchsGradients) {
  for (const auto dtype : {torch::kFloat, torch::kBFloat16}) {
    const std::string where = c10::toString(dtype);
    const auto in = make_inputs({4, 7, 32}, 48, dtype);
    const auto got = run(detail::linear_gelu_function, in, torch::kCPU);
    const auto want = run(libtorch_linear_gelu, in, torch::kCPU, torch::kDouble);
    // bf16: the CPU's bf16 products round their sums coarsely (as in
    // ProductReductions' tests); the GPU's are held to 1% below.
    expect_near(got, want, dtype == torch::kFloat ? 1e-5 : 3e-2, where);
    EXPECT_EQ(got.a.scalar_type(), dtype) << where;
    EXPECT_EQ(got.dbias.scalar_type(), dtype) << where;
  }
}

// The weight mirror's parameters (train/weight_mirror) come with their
// gradient buffers set: the weight's product and the bias's sum add to them
// in place, and autograd is handed no gradient to add there again.
TEST(GpuLinearGelu, AddsToAGradientBufferSetBeforehandInPlace) {
  const auto in = make_inputs({4, 7, 16}, 24, torch::kFloat);
  const auto once = run(detail::linear_gelu_function, in, torch::kCPU);
  const auto weight = in.weight.clone().requires_grad_(), bias = in.bias.clone().requires_grad_();
  const auto buffer = torch::full({24 * 16 + 24}, 0.5);
  weight.mutable_grad() = buffer.narrow(0, 0, 24 * 16).view({24, 16});
  bias.mutable_grad() = buffer.narrow(0, 24 * 16, 24);
  for (const double times : {1.0, 2.0}) {
    detail::linear_gelu_function(in.x, weight, bias).backward(in.da);
    EXPECT_EQ(weight.grad().data_ptr(), buffer.data_ptr());
    EXPECT_EQ(bias.grad().data_ptr(), buffer.narrow(0, 24 * 16, 24).data_ptr());
    EXPECT_TRUE(torch::allclose(weight.grad(), once.dweight * times + 0.5, 1e-5, 1e-5)) << times;
    EXPECT_TRUE(torch::allclose(bias.grad(), once.dbias * times + 0.5, 1e-5, 1e-5)) << times;
  }
  const auto a = detail::linear_gelu_function(in.x, weight, bias);
  const auto handed = (*a.grad_fn())({in.da});
  ASSERT_EQ(handed.size(), 3u);
  EXPECT_FALSE(handed[1].defined());
  EXPECT_FALSE(handed[2].defined());
}

// The kernels' host functions, which run on the CPU wherever LibTorch has CUDA.
TEST(CudaLinearGelu, TakesWholeVectorRowsAndFillsTheGpu) {
#if VIT_WITH_CUDA
  EXPECT_TRUE(cuda::gelu_fits(8));
  EXPECT_TRUE(cuda::gelu_fits(1536));
  EXPECT_FALSE(cuda::gelu_fits(0));
  EXPECT_FALSE(cuda::gelu_fits(100));  // not whole 16-byte vectors
  // ViT-S/16's MLP (1536 wide: 6 blocks of 256 columns) at batch 256
  // (50,432 rows) on 132 SMs: four blocks a SM; few rows: two a row lane
  // at least; no SM count: as one.
  EXPECT_EQ(cuda::gelu_backward_chunks(50432, 1536, 132), 88);
  EXPECT_EQ(cuda::gelu_backward_chunks(40, 1536, 132), 2);
  EXPECT_EQ(cuda::gelu_backward_chunks(5, 8, 0), 1);
#else
  GTEST_SKIP() << "this LibTorch has no CUDA, so vit's CUDA kernels are not built";
#endif
}

// Output widths of one to several column blocks (a last one partly filled:
// 520 = 65 vectors), rows that leave row lanes idle, bf16 and fp16: within
// 1% of double; a to LibTorch's CUDA gelu within a 16-bit step; the bias's
// sums the same bits on a second run.
TEST(CudaLinearGelu, MatchesTheArithmeticInDoubleForwardAndBackward) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "needs a CUDA device";
  GeluEnvironment env("own");
  const c10::Device cuda(c10::kCUDA, 0);
  struct Shape {
    std::vector<int64_t> x;
    int64_t out;
  };
  const std::vector<Shape> shapes = {
      {{8, 65, 384}, 1536}, {{3, 101, 256}, 1024}, {{5, 13, 64}, 520}, {{1, 1, 16}, 8}};
  for (const auto dtype : {torch::kBFloat16, torch::kHalf})
    for (const auto& shape : shapes) {
      const std::string where = std::string(c10::toString(dtype)) + ", x " +
                                c10::str(c10::IntArrayRef(shape.x)) + ", out " +
                                std::to_string(shape.out);
      const auto in = make_inputs(shape.x, shape.out, dtype);
      ASSERT_TRUE(gpu_linear_gelu_applies(in.x.to(cuda).requires_grad_(), in.weight.to(cuda),
                                          in.bias.to(cuda)))
          << where;
      const auto got = run(gpu_linear_gelu, in, cuda);
      expect_near(got, run(libtorch_linear_gelu, in, torch::kCPU, torch::kDouble), 1e-2, where);
      const auto libtorch = run(libtorch_linear_gelu, in, cuda);
      EXPECT_LT(testing::relative_error(got.a, libtorch.a), 1e-2) << where;
      EXPECT_TRUE(got.dbias.equal(run(gpu_linear_gelu, in, cuda).dbias)) << where;
    }
}

// Where the kernels do not apply, the same function runs LibTorch's: not
// asked for, fp32, no gradients, under autocast, a width of 100.
TEST(CudaLinearGelu, AppliesOnlyWhereAskedTo16BitRowsWithGradientsOutsideAutocast) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "needs a CUDA device";
  GeluEnvironment env("own");
  const auto options = torch::TensorOptions(c10::Device(c10::kCUDA, 0)).dtype(torch::kBFloat16);
  const auto x = torch::randn({4, 64}, options).requires_grad_();
  const auto w = torch::randn({128, 64}, options), b = torch::randn({128}, options);
  EXPECT_TRUE(gpu_linear_gelu_applies(x, w, b));
  {
    GeluEnvironment unset(nullptr);
    EXPECT_FALSE(gpu_linear_gelu_applies(x, w, b));
  }
  EXPECT_FALSE(
      gpu_linear_gelu_applies(x.to(torch::kFloat), w.to(torch::kFloat), b.to(torch::kFloat)));
  EXPECT_FALSE(
      gpu_linear_gelu_applies(x, torch::randn({100, 64}, options), torch::randn({100}, options)));
  {
    AutocastScope autocast(Precision::kBf16, c10::Device(c10::kCUDA, 0));
    EXPECT_FALSE(gpu_linear_gelu_applies(x, w, b));
  }
  torch::NoGradGuard no_grad;
  EXPECT_FALSE(gpu_linear_gelu_applies(x, w, b));
}

}  // namespace
}  // namespace vit::gpu_linear_gelu_test
