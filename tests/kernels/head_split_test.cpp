#include "vit/kernels/head_split.hpp"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <stdexcept>

#include "kernels/kernel_paths.hpp"

namespace vit {
namespace {

constexpr int64_t kB = 3, kN = 5, kHeads = 2, kHeadDim = 4;

// What LibTorch's views give: (B, N, P, H, Dh) -> (P, B, H, N, Dh) -> P tensors.
std::vector<torch::Tensor> reference_split(const torch::Tensor& x, int64_t parts) {
  return x.view({kB, kN, parts, kHeads, kHeadDim}).permute({2, 0, 3, 1, 4}).unbind(0);
}

TEST(SplitHeads, GivesTheHeadsOfEachPartContiguousInTheInputsDtype) {
  for (const auto dtype : {torch::kFloat, torch::kBFloat16}) {
    torch::manual_seed(1);
    const auto x = torch::randn({kB, kN, 3 * kHeads * kHeadDim}).to(dtype);
    const auto ours = split_heads(x, 3, kHeads, kHeadDim);
    const auto expected = reference_split(x, 3);
    ASSERT_EQ(ours.size(), 3u);
    for (size_t p = 0; p < 3; ++p) {
      EXPECT_EQ(ours[p].sizes(), torch::IntArrayRef({kB, kHeads, kN, kHeadDim}));
      EXPECT_EQ(ours[p].scalar_type(), dtype);
      EXPECT_TRUE(ours[p].is_contiguous());
      EXPECT_TRUE(torch::equal(ours[p], expected[p])) << "part " << p;
    }
    // Head 1 of part 2 (v), token 4, feature 3 is column 2*8 + 1*4 + 3 = 23.
    EXPECT_EQ(ours[2][1][1][4][3].item<float>(), x[1][4][23].item<float>());
  }
}

// The gradient of x is each part's gradient put back in its columns, and 0
// in the columns of a part that received none (here k).
TEST(SplitHeads, BackwardPutsEachPartsGradientBackAndZerosForAnUnusedPart) {
  torch::manual_seed(2);
  const auto x0 = torch::randn({kB, kN, 3 * kHeads * kHeadDim});
  const auto dq = torch::randn({kB, kHeads, kN, kHeadDim});
  const auto dv = torch::randn({kB, kHeads, kN, kHeadDim});

  auto x = x0.clone().requires_grad_();
  const auto parts = split_heads(x, 3, kHeads, kHeadDim);
  ((parts[0] * dq).sum() + (parts[2] * dv).sum()).backward();

  auto x_ref = x0.clone().requires_grad_();
  const auto ref = reference_split(x_ref, 3);
  ((ref[0] * dq).sum() + (ref[2] * dv).sum()).backward();

  EXPECT_TRUE(torch::equal(x.grad(), x_ref.grad()));
  const auto k_columns = x.grad().narrow(/*dim=*/2, kHeads * kHeadDim, kHeads * kHeadDim);
  EXPECT_EQ(k_columns.abs().max().item<float>(), 0.0f);
  // Head 0 of q, token 2, feature 1 is column 1.
  EXPECT_EQ(x.grad()[0][2][1].item<float>(), dq[0][0][2][1].item<float>());
}

TEST(SplitHeads, Bf16GradientStaysBf16) {
  auto x = torch::randn({kB, kN, 2 * kHeads * kHeadDim}).to(torch::kBFloat16).requires_grad_();
  const auto parts = split_heads(x, 2, kHeads, kHeadDim);
  (parts[0].to(torch::kFloat).sum() + 2 * parts[1].to(torch::kFloat).sum()).backward();
  ASSERT_EQ(x.grad().scalar_type(), torch::kBFloat16);
  EXPECT_EQ(x.grad()[0][0][0].item<float>(), 1.0f);                  // k's first column
  EXPECT_EQ(x.grad()[0][0][kHeads * kHeadDim].item<float>(), 2.0f);  // v's first column
}

TEST(SplitHeads, RejectsAWidthThatIsNotPartsTimesHeadsTimesHeadDim) {
  EXPECT_THROW(split_heads(torch::zeros({kB, kN, 23}), 3, kHeads, kHeadDim), std::invalid_argument);
  EXPECT_THROW(split_heads(torch::zeros({kN, 24}), 3, kHeads, kHeadDim), std::invalid_argument);
}

// With a bias: the heads of x + bias, the sum taken in fp32 and rounded once
// to x's dtype (our kernel), or x + bias in x's dtype (LibTorch's operators:
// the bias rounded to bf16 first). Head widths 1, 5 and 17 take the
// kernel's partial vectors.
TEST(SplitHeads, WithBiasGivesTheHeadsOfTheBiasedProduct) {
  for (const int64_t head_dim : {int64_t{1}, int64_t{5}, int64_t{17}, int64_t{64}}) {
    for (const auto dtype : {torch::kFloat, torch::kBFloat16}) {
      torch::manual_seed(3);
      const int64_t width = 3 * kHeads * head_dim;
      const auto x = torch::randn({kB, kN, width}).to(dtype);
      const auto bias = torch::randn({width});
      const auto ours = split_heads_with_bias(x, bias, 3, kHeads, head_dim);
      const auto expected = x.view({kB, kN, 3, kHeads, head_dim})
                                .to(torch::kFloat)
                                .add(bias.view({3, kHeads, head_dim}))
                                .to(dtype)
                                .permute({2, 0, 3, 1, 4})
                                .unbind(0);
      for (size_t p = 0; p < 3; ++p) {
        SCOPED_TRACE(testing::kernel_path() + ", head_dim " + std::to_string(head_dim) + ", " +
                     c10::toString(dtype) + ", part " + std::to_string(p));
        EXPECT_EQ(ours[p].scalar_type(), dtype);
        EXPECT_TRUE(ours[p].is_contiguous());
        if (testing::own_kernels_run() || dtype == torch::kFloat)
          EXPECT_TRUE(torch::equal(ours[p], expected[p]));
        else  // two roundings (the bias to bf16, then the sum), each within 2^-9 of
              // values below 8 here: within 1/32, against O(1) for a misplaced value
          EXPECT_TRUE(torch::allclose(ours[p].to(torch::kFloat), expected[p].to(torch::kFloat),
                                      /*rtol=*/0, /*atol=*/1.0 / 32));
      }
    }
  }
}

// Backward: x's gradient is each part's put back (zeros for the part that got
// none, here k), in x's dtype; the bias's is x's summed over the rows, in fp32.
TEST(SplitHeads, WithBiasSumsTheBiasGradientOverTheRows) {
  for (const auto dtype : {torch::kFloat, torch::kBFloat16}) {
    SCOPED_TRACE(testing::kernel_path() + ", " + c10::toString(dtype));
    torch::manual_seed(4);
    const int64_t head_dim = 7, width = 3 * kHeads * head_dim;
    auto x = torch::randn({kB, kN, width}).to(dtype).requires_grad_();
    auto bias = torch::randn({width}).requires_grad_();
    const auto dq = torch::randn({kB, kHeads, kN, head_dim}).to(dtype);
    const auto dv = torch::randn({kB, kHeads, kN, head_dim}).to(dtype);
    const auto parts = split_heads_with_bias(x, bias, 3, kHeads, head_dim);
    torch::autograd::backward({parts[0], parts[2]}, {dq, dv});

    ASSERT_EQ(x.grad().scalar_type(), dtype);
    ASSERT_EQ(bias.grad().scalar_type(), torch::kFloat);
    const auto expected_dx = torch::cat({dq.permute({0, 2, 1, 3}).reshape({kB, kN, -1}),
                                         torch::zeros({kB, kN, kHeads * head_dim}, dtype),
                                         dv.permute({0, 2, 1, 3}).reshape({kB, kN, -1})},
                                        /*dim=*/2);
    EXPECT_TRUE(torch::equal(x.grad(), expected_dx));
    const auto expected_dbias = expected_dx.to(torch::kFloat).sum(std::vector<int64_t>{0, 1});
    // Summed in fp32 (ours), or in bf16 by LibTorch's operators (x + bias in bf16).
    const double tolerance =
        testing::own_kernels_run() || dtype == torch::kFloat ? 1e-5 : 1.0 / 128;
    EXPECT_TRUE(torch::allclose(bias.grad(), expected_dbias, tolerance, tolerance));
    EXPECT_EQ(bias.grad().narrow(0, kHeads * head_dim, kHeads * head_dim).abs().max().item<float>(),
              0.0f);
    // Column 0 is head 0 of q, feature 0: the sum of dq over images and tokens.
    EXPECT_NEAR(bias.grad()[0].item<float>(),
                dq.to(torch::kFloat).select(3, 0).select(1, 0).sum().item<float>(), tolerance);
  }
}

// More rows than one block of the kernel's bias sums (64) and than one
// thread's share: the sum is still over every row.
TEST(SplitHeads, WithBiasSumsOverManyRows) {
  torch::manual_seed(5);
  const int64_t images = 40, tokens = 17, head_dim = 16, width = 2 * kHeads * head_dim;
  auto x = torch::randn({images, tokens, width}).requires_grad_();
  auto bias = torch::zeros({width}).requires_grad_();
  const auto parts = split_heads_with_bias(x, bias, 2, kHeads, head_dim);
  (parts[0].sum() + 3 * parts[1].sum()).backward();
  const auto expected = torch::cat({torch::full({kHeads * head_dim}, float(images * tokens)),
                                    torch::full({kHeads * head_dim}, float(3 * images * tokens))});
  EXPECT_TRUE(torch::equal(bias.grad(), expected)) << bias.grad();
}

TEST(SplitHeads, WithBiasTakesOurKernelOnlyForContiguousFloatInputsOfTheBiasWidth) {
  const int64_t width = 3 * kHeads * kHeadDim;
  const auto bias = torch::zeros({width});
  const bool own = testing::own_kernels_run();
  EXPECT_EQ(split_heads_with_bias_uses_own_kernel(bias), own);
  EXPECT_EQ(split_heads_with_bias_uses_own_kernel(bias, torch::zeros({kB, kN, width})), own);
  EXPECT_EQ(
      split_heads_with_bias_uses_own_kernel(bias, torch::zeros({kB, kN, width}, torch::kBFloat16)),
      own);
  EXPECT_FALSE(split_heads_with_bias_uses_own_kernel(bias.to(torch::kDouble)));
  EXPECT_FALSE(split_heads_with_bias_uses_own_kernel(torch::zeros({2 * width}).slice(0, 0, -1, 2)));
  EXPECT_FALSE(
      split_heads_with_bias_uses_own_kernel(bias, torch::zeros({kB, width, kN}).transpose(1, 2)));
  EXPECT_FALSE(split_heads_with_bias_uses_own_kernel(bias, torch::zeros({kB, kN, width + 1})));
  EXPECT_FALSE(
      split_heads_with_bias_uses_own_kernel(bias, torch::zeros({kB, kN, width}, torch::kDouble)));
}

// What the kernel does not take still gives x + bias split: a strided x, a
// double x (its bias cast to it).
TEST(SplitHeads, WithBiasFallsBackForWhatOurKernelDoesNotTake) {
  torch::manual_seed(6);
  const int64_t width = 3 * kHeads * kHeadDim;
  const auto bias = torch::randn({width});
  for (const auto& x : {torch::randn({kB, width, kN}).transpose(1, 2),
                        torch::randn({kB, kN, width}, torch::kDouble)}) {
    const auto ours = split_heads_with_bias(x, bias, 3, kHeads, kHeadDim);
    const auto expected = reference_split((x + bias.to(x.scalar_type())).contiguous(), 3);
    for (size_t p = 0; p < 3; ++p)
      EXPECT_TRUE(torch::equal(ours[p], expected[p])) << x.scalar_type() << " part " << p;
  }
}

TEST(SplitHeads, WithBiasRejectsAMissingBias) {
  EXPECT_THROW(split_heads_with_bias(torch::zeros({kB, kN, 24}), {}, 3, kHeads, kHeadDim),
               std::invalid_argument);
}

}  // namespace
}  // namespace vit
