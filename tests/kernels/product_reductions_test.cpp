// LayerNorm and the linear layer with their parameter gradients as matrix
// products (the model's path on GPUs, bf16 end to end), against LibTorch's
// own operators, forward and backward. They run on any device: on the CPU,
// and on a GPU where there is one (CudaProductReductions).
#include "vit/kernels/product_reductions.hpp"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <functional>
#include <string>
#include <vector>

#include "kernel_paths.hpp"
#include "tensor_values.hpp"
#include "vit/build_features.hpp"
#include "vit/infer/precision.hpp"

#if VIT_WITH_CUDA
#include "../../src/kernels/cuda/layer_norm_parameter_gradients.hpp"
#endif

namespace vit::product_reductions_test {
namespace {

using Op =
    std::function<torch::Tensor(const torch::Tensor&, const torch::Tensor&, const torch::Tensor&)>;

// The output and the gradients of x, weight and bias for an upstream dy.
std::vector<torch::Tensor> run(const Op& op, const torch::Tensor& x, const torch::Tensor& weight,
                               const torch::Tensor& bias, const torch::Tensor& dy) {
  auto xl = x.clone().requires_grad_(), wl = weight.clone().requires_grad_(),
       bl = bias.clone().requires_grad_();
  auto y = op(xl, wl, bl);
  y.backward(dy);
  return {y.detach(), xl.grad(), wl.grad(), bl.grad()};
}

// op in `dtype` on `device` against reference_op in double on the CPU, from
// the same inputs (rounded to `dtype` once).
void expect_near_reference(const Op& op, const Op& reference_op, torch::ScalarType dtype,
                           const std::vector<int64_t>& x_shape, int64_t weight_rows,
                           double tolerance, c10::Device device = torch::kCPU) {
  torch::manual_seed(7);
  const int64_t d = x_shape.back();
  // A mean far from 0 and a spread unlike 1, where rounding x_hat would show.
  const auto x = (torch::randn(x_shape) * 3 + 2).to(dtype);
  const auto weight =
      (weight_rows > 0 ? torch::randn({weight_rows, d}) * 0.1 : torch::randn({d}) * 0.5 + 1)
          .to(dtype);
  const auto bias = torch::randn({weight_rows > 0 ? weight_rows : d}).to(dtype);
  auto y_shape = x_shape;
  if (weight_rows > 0) y_shape.back() = weight_rows;
  const auto dy = torch::randn(y_shape).to(dtype);
  const auto got = run(op, x.to(device), weight.to(device), bias.to(device), dy.to(device));
  const auto want = run(reference_op, x.to(torch::kDouble), weight.to(torch::kDouble),
                        bias.to(torch::kDouble), dy.to(torch::kDouble));
  const char* names[] = {"y", "dx", "dweight", "dbias"};
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].scalar_type(), dtype) << names[i];
    EXPECT_EQ(got[i].sizes(), want[i].sizes()) << names[i];
    EXPECT_LT(testing::relative_error(got[i], want[i]), tolerance)
        << names[i] << ", " << c10::toString(dtype) << ", x " << c10::IntArrayRef(x_shape);
  }
}

// fp32 (above) checks the arithmetic to 1e-5; bf16 checks the types through
// it. The CPU's bf16 products round their sums more coarsely than cuBLAS
// (1.5% on a sum of 130 rows here), so the CPU's tolerance is 3%;
// CudaProductReductions holds the GPU's results to 1%.
constexpr double kBf16Tolerance = 3e-2;

torch::Tensor layer_norm_ours(const torch::Tensor& x, const torch::Tensor& w,
                              const torch::Tensor& b) {
  return layer_norm_with_product_gradients(x, w, b, 1e-6);
}
torch::Tensor layer_norm_libtorch(const torch::Tensor& x, const torch::Tensor& w,
                                  const torch::Tensor& b) {
  return torch::layer_norm(x, {x.size(-1)}, w, b, 1e-6);
}

TEST(LayerNormProductGradients, MatchesLibTorchForwardAndBackward) {
  for (const auto& shape : std::vector<std::vector<int64_t>>{{4, 7, 16}, {65, 384}, {3, 5}}) {
    expect_near_reference(layer_norm_ours, layer_norm_libtorch, torch::kFloat, shape, 0, 1e-5);
    expect_near_reference(layer_norm_ours, layer_norm_libtorch, torch::kBFloat16, shape, 0,
                          kBf16Tolerance);
  }
}

TEST(LinearProductBiasGradient, MatchesLibTorchForwardAndBackward) {
  const std::string bf16_refused = testing::cpu_bf16_products_refused();
  for (const auto& shape : std::vector<std::vector<int64_t>>{{4, 7, 16}, {130, 48}}) {
    expect_near_reference(linear_with_product_bias_gradient, at::linear, torch::kFloat, shape, 24,
                          1e-5);
    if (bf16_refused.empty())
      expect_near_reference(linear_with_product_bias_gradient, at::linear, torch::kBFloat16, shape,
                            24, kBf16Tolerance);
  }
  if (!bf16_refused.empty()) GTEST_SKIP() << "the bf16 cases (fp32's ran): " << bf16_refused;
}

// The weight mirror's parameters (train/weight_mirror) come with their
// gradient buffers set: the products add to them in place and hand autograd
// no gradient to add there in a pass of its own; a second backward adds again.
TEST(LinearProductBiasGradient, AddsToAGradientBufferSetBeforehandInPlace) {
  torch::manual_seed(3);
  const auto x = torch::randn({4, 7, 16}), dy = torch::randn({4, 7, 24});
  const auto weight = torch::randn({24, 16}).requires_grad_(),
             bias = torch::randn({24}).requires_grad_();
  linear_with_product_bias_gradient(x, weight, bias).backward(dy);  // no buffers: returned
  const auto dweight = weight.grad().clone(), dbias = bias.grad().clone();
  const auto buffer = torch::full({24 * 16 + 24}, 0.5);
  weight.mutable_grad() = buffer.narrow(0, 0, 24 * 16).view({24, 16});
  bias.mutable_grad() = buffer.narrow(0, 24 * 16, 24);
  for (const double times : {1.0, 2.0}) {
    linear_with_product_bias_gradient(x, weight, bias).backward(dy);
    EXPECT_EQ(weight.grad().data_ptr(), buffer.data_ptr());
    EXPECT_EQ(bias.grad().data_ptr(), buffer.narrow(0, 24 * 16, 24).data_ptr());
    EXPECT_TRUE(torch::allclose(weight.grad(), dweight * times + 0.5, 1e-5, 1e-5)) << times;
    EXPECT_TRUE(torch::allclose(bias.grad(), dbias * times + 0.5, 1e-5, 1e-5)) << times;
  }
  // What the function hands autograd: no weight or bias gradient to add.
  const auto y = linear_with_product_bias_gradient(x, weight, bias);
  const auto handed = (*y.grad_fn())({dy});
  ASSERT_EQ(handed.size(), 3u);
  EXPECT_FALSE(handed[1].defined());
  EXPECT_FALSE(handed[2].defined());
  EXPECT_TRUE(torch::allclose(weight.grad(), dweight * 3 + 0.5, 1e-5, 1e-5));
}

// Only for the GPU path: CPU tensors keep LibTorch's operators
// (CudaProductReductions checks the CUDA cases).
TEST(ProductReductions, ApplyOnlyToLowPrecisionCudaTensorsWithGradients) {
  const auto x = torch::randn({4, 8}, torch::kBFloat16).requires_grad_();
  const auto w = torch::randn({8}, torch::kBFloat16), b = torch::randn({8}, torch::kBFloat16);
  EXPECT_FALSE(product_reductions_apply(x, w, b));  // on the CPU
  EXPECT_FALSE(product_reductions_apply(x, w, torch::Tensor()));
}

// On a GPU, where the model takes them (bf16 end to end): bf16 within 1% of
// double, and the path chosen only outside autocast, with gradients to
// compute. Skips without a CUDA device (CI has none).
// How many blocks of rows the CUDA pass splits LayerNorm's sums into: about
// four blocks of 256 threads per SM, each block 64 columns wide, and at least
// two rows for each of a block's 8 warps. A host function: it runs on the CPU
// wherever LibTorch has CUDA.
TEST(CudaProductReductions, RowChunksFillTheGpuWithoutStarvingAWarp) {
#if VIT_WITH_CUDA
  // p4d384/512: 25,600 rows of 384 (6 column blocks) on an H100/H200 SXM's
  // 132 SMs and an H100 PCIe's 114.
  EXPECT_EQ(cuda::layer_norm_parameter_gradient_chunks(25600, 384, 132), 88);
  EXPECT_EQ(cuda::layer_norm_parameter_gradient_chunks(25600, 384, 114), 76);
  // Few rows: 40 give two chunks of 20, 10 give one.
  EXPECT_EQ(cuda::layer_norm_parameter_gradient_chunks(40, 384, 132), 2);
  EXPECT_EQ(cuda::layer_norm_parameter_gradient_chunks(10, 384, 132), 1);
  // Columns enough to fill the GPU alone, or an SM count of 0: one chunk.
  EXPECT_EQ(cuda::layer_norm_parameter_gradient_chunks(1000000, 8192, 8), 1);
  EXPECT_EQ(cuda::layer_norm_parameter_gradient_chunks(25600, 384, 0), 1);
#else
  GTEST_SKIP() << "this LibTorch has no CUDA, so vit's CUDA kernels are not built";
#endif
}

TEST(CudaProductReductions, MatchLibTorchInBf16AndApplyOnlyOutsideAutocast) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "needs a CUDA device";
  const c10::Device cuda(c10::kCUDA, 0);
  // The LayerNorm's parameter gradients in kernels/cuda's one pass: the job's
  // rows of 384 (6 blocks of 64 columns), rows of 200 (the last block 8
  // columns wide) in a number of rows that no block count divides, fp16; and
  // rows of 33, odd, which LibTorch sums instead.
  for (const auto dtype : {torch::kBFloat16, torch::kHalf})
    for (const auto& shape :
         std::vector<std::vector<int64_t>>{{8, 65, 384}, {3, 1009, 200}, {5, 7, 33}})
      expect_near_reference(layer_norm_ours, layer_norm_libtorch, dtype, shape, 0, 1e-2, cuda);
  expect_near_reference(linear_with_product_bias_gradient, at::linear, torch::kBFloat16,
                        {8, 65, 384}, 96, 1e-2, cuda);
  const auto x =
      torch::randn({4, 8}, torch::TensorOptions(cuda).dtype(torch::kBFloat16)).requires_grad_();
  const auto w = torch::randn({8}, x.options()), b = torch::randn({8}, x.options());
  EXPECT_TRUE(product_reductions_apply(x, w, b));
  EXPECT_FALSE(
      product_reductions_apply(x.to(torch::kFloat), w.to(torch::kFloat), b.to(torch::kFloat)));
  EXPECT_FALSE(product_reductions_apply(x, w, torch::Tensor()));
  {
    AutocastScope autocast(Precision::kBf16, cuda);
    EXPECT_FALSE(product_reductions_apply(x, w, b));
  }
  torch::NoGradGuard no_grad;
  EXPECT_FALSE(product_reductions_apply(x, w, b));
}

}  // namespace
}  // namespace vit::product_reductions_test
