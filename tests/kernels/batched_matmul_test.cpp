#include "vit/kernels/batched_matmul.hpp"

#include <ATen/Parallel.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "vit/infer/precision.hpp"

namespace vit {
namespace {

// The attention's shapes in small: 6 heads' (7 x 5) queries against 7 keys,
// the operands strided the way the attention passes them (keys transposed).
struct Operands {
  torch::Tensor q, k, probs, v;
};

Operands make_operands(uint64_t seed) {
  torch::manual_seed(seed);
  return {torch::randn({6, 7, 5}), torch::randn({6, 7, 5}),
          torch::softmax(torch::randn({6, 7, 7}), -1), torch::randn({6, 7, 5})};
}

// Runs `body` with LibTorch on two threads, so the products are shared out.
template <typename F>
void on_two_threads(F body) {
  const int threads = at::get_num_threads();
  at::set_num_threads(2);
  body();
  at::set_num_threads(threads);
}

TEST(BatchedMatmul, OwnProductsRunForFloatOnTheCpuOutsideAutocastOnly) {
  const Operands o = make_operands(0);
  EXPECT_TRUE(batched_matmul_uses_own_kernel(o.q, o.k.transpose(1, 2)));
  EXPECT_FALSE(batched_matmul_uses_own_kernel(o.q.to(torch::kBFloat16),
                                              o.k.transpose(1, 2).to(torch::kBFloat16)));
  EXPECT_FALSE(batched_matmul_uses_own_kernel(o.q.to(torch::kDouble), o.k.transpose(1, 2)));
  EXPECT_FALSE(batched_matmul_uses_own_kernel(o.q, o.k));                            // 5 != 7
  EXPECT_FALSE(batched_matmul_uses_own_kernel(o.q.unsqueeze(0), o.k.unsqueeze(0)));  // 4-D
  {
    AutocastScope autocast(Precision::kBf16, torch::kCPU);
    EXPECT_FALSE(batched_matmul_uses_own_kernel(o.q, o.k.transpose(1, 2)));
  }
}

// Forward and both gradients against torch::matmul's, for the four operand
// layouts of an attention's forward and backward (plain, transposed second,
// transposed first, both transposed).
TEST(BatchedMatmul, MatchesTorchMatmulForwardAndBackwardOnEveryLayout) {
  on_two_threads([] {
    const Operands o = make_operands(1);
    const std::vector<std::pair<torch::Tensor, torch::Tensor>> cases = {
        {o.probs, o.v},
        {o.q, o.k.transpose(1, 2)},
        {o.probs.transpose(1, 2), o.v},
        {o.v.transpose(1, 2), o.probs.transpose(1, 2)}};
    for (size_t i = 0; i < cases.size(); ++i) {
      auto a = cases[i].first.clone().requires_grad_();
      auto b = cases[i].second.detach().requires_grad_();
      auto a_ref = cases[i].first.clone().requires_grad_();
      auto b_ref = cases[i].second.detach().clone().requires_grad_();
      const auto y = batched_matmul(a, b), y_ref = torch::matmul(a_ref, b_ref);
      ASSERT_EQ(y.sizes(), y_ref.sizes()) << "case " << i;
      EXPECT_TRUE(torch::allclose(y, y_ref, 1e-5, 1e-6)) << "case " << i;
      const auto grad_out = torch::randn(y.sizes());
      y.backward(grad_out);
      y_ref.backward(grad_out);
      EXPECT_TRUE(torch::allclose(a.grad(), a_ref.grad(), 1e-5, 1e-6)) << "case " << i;
      EXPECT_TRUE(torch::allclose(b.grad(), b_ref.grad(), 1e-5, 1e-6)) << "case " << i;
    }
  });
}

// A product of two 2 x 2 matrices, by hand.
TEST(BatchedMatmul, ComputesAKnownProduct) {
  const auto a = torch::tensor({1.f, 2.f, 3.f, 4.f}).view({1, 2, 2});
  const auto b = torch::tensor({5.f, 6.f, 7.f, 8.f}).view({1, 2, 2});
  const auto y = batched_matmul(a, b);
  EXPECT_TRUE(torch::equal(y, torch::tensor({19.f, 22.f, 43.f, 50.f}).view({1, 2, 2})));
}

// Only one operand needs a gradient; and without grad mode no graph is built
// even for inputs that require one (the worker threads must not build one
// either).
TEST(BatchedMatmul, GradientOfOneOperandAndNoGraphWithoutGradMode) {
  on_two_threads([] {
    const Operands o = make_operands(2);
    auto q = o.q.clone().requires_grad_();
    batched_matmul(q, o.k.transpose(1, 2)).sum().backward();
    EXPECT_TRUE(torch::allclose(q.grad(), o.k.sum(1, true).expand_as(o.q), 1e-5, 1e-6));

    torch::NoGradGuard no_grad;
    const auto y = batched_matmul(q, o.k.transpose(1, 2));
    EXPECT_FALSE(y.requires_grad());
    EXPECT_TRUE(torch::allclose(y, torch::matmul(o.q, o.k.transpose(1, 2)), 1e-5, 1e-6));
  });
}

TEST(BatchedMatmul, WorksInsideInferenceMode) {
  on_two_threads([] {
    const Operands o = make_operands(4);
    c10::InferenceMode inference;
    const auto q = o.q.clone(), k = o.k.clone();  // inference tensors
    const auto y = batched_matmul(q, k.transpose(1, 2));
    EXPECT_TRUE(y.is_inference());
    EXPECT_TRUE(torch::allclose(y, torch::matmul(q, k.transpose(1, 2)), 1e-5, 1e-6));
  });
}

TEST(BatchedMatmul, Bf16GoesThroughTorchMatmul) {
  const Operands o = make_operands(3);
  const auto a = o.probs.to(torch::kBFloat16), b = o.v.to(torch::kBFloat16);
  const auto y = batched_matmul(a, b);
  EXPECT_EQ(y.scalar_type(), torch::kBFloat16);
  EXPECT_TRUE(torch::equal(y, torch::matmul(a, b)));
}

}  // namespace
}  // namespace vit
