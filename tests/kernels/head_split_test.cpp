#include "vit/kernels/head_split.hpp"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <stdexcept>

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

}  // namespace
}  // namespace vit
