#include "vit/model/residual.hpp"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "error_of.hpp"
#include "vit/error.hpp"
#include "vit/infer/precision.hpp"

namespace vit {
namespace {

constexpr int64_t B = 2, N = 5, K = 12, D = 8;

// A branch of a linear layer with O(1) biases (so a bias added twice, or
// not at all, shows) and a stream to add it to.
struct Case {
  Case() {
    layer->bias.data().normal_();
    norm->weight.data().normal_();
    norm->bias.data().normal_();
    drop->eval();
  }
  int seeded = (torch::manual_seed(4), 0);  // first: the members below draw from it
  torch::nn::Linear layer{K, D};
  torch::nn::Dropout drop{0.5};
  torch::nn::LayerNorm norm{torch::nn::LayerNormOptions({D})};
  torch::Tensor x = torch::randn({B, N, D});
  torch::Tensor input = torch::randn({B, N, K});
  torch::Tensor expected_sum() { return x + layer(input); }
  Branch branch() const { return {layer, drop, input}; }
};

TEST(Residual, APendingAddIsComputedWithTheFirstNormAskedFor) {
  Case c;
  torch::NoGradGuard no_grad;
  Residual sum = Residual(c.x) + c.branch();
  // The norm first: the add and the norm in one pass where the kernel runs.
  const auto normalized = sum.normalized(c.norm);
  EXPECT_LT((normalized - c.norm(c.expected_sum())).abs().max().item<double>(), 1e-5);
  EXPECT_LT((sum.tensor() - c.expected_sum()).abs().max().item<double>(), 1e-5);
  // Kept for the same norm, computed afresh for another.
  EXPECT_TRUE(sum.normalized(c.norm).is_same(normalized));
  torch::nn::LayerNorm other(torch::nn::LayerNormOptions({D}));
  EXPECT_LT((sum.normalized(other) - other(sum.tensor())).abs().max().item<double>(), 1e-5);
  EXPECT_TRUE(sum.normalized(other).is_same(sum.normalized(other)));
}

TEST(Residual, ReadFirstTheSumIsThePlainAdd) {
  Case c;
  torch::NoGradGuard no_grad;
  Residual sum = Residual(c.x) + c.branch();
  EXPECT_LT((sum.tensor() - c.expected_sum()).abs().max().item<double>(), 1e-5);
  EXPECT_LT((sum.normalized(c.norm) - c.norm(c.expected_sum())).abs().max().item<double>(), 1e-5);
  // The stream's left side is untouched.
  EXPECT_TRUE(torch::equal(Residual(c.x).tensor(), c.x));
}

// A copy is a value: reading it evaluates its own pending add, to the same
// sum, and leaves the original's for it to evaluate.
TEST(Residual, ACopyEvaluatesItsOwnAddToTheSameSum) {
  Case c;
  torch::NoGradGuard no_grad;
  Residual sum = Residual(c.x) + c.branch();
  Residual copy = sum;
  const auto copied = copy.tensor();
  EXPECT_FALSE(copied.is_same(sum.tensor()));
  EXPECT_TRUE(torch::equal(copied, sum.tensor()));
  // The class token's row of the evaluated sum, as a stream of its own.
  Residual row = sum.class_token();
  EXPECT_EQ(row.tensor().sizes(), (std::vector<int64_t>{B, 1, D}));
  EXPECT_TRUE(torch::equal(row.tensor(), sum.tensor().narrow(1, 0, 1)));
}

// The gradients flow through the fused pass to every input, as through the
// plain expression.
TEST(Residual, GradientsMatchThePlainExpression) {
  Case c;
  c.x.requires_grad_(true);
  c.input.requires_grad_(true);
  const auto leaves = std::vector<torch::Tensor>{c.x,           c.input,        c.layer->weight,
                                                 c.layer->bias, c.norm->weight, c.norm->bias};
  const auto target = torch::randn({B, N, D});
  const auto loss_of = [&](const torch::Tensor& sum, const torch::Tensor& normalized) {
    return (sum * target).sum() + (normalized * normalized).sum();
  };
  Residual fused = Residual(c.x) + c.branch();
  const auto fused_normalized = fused.normalized(c.norm);
  const auto fused_grads =
      torch::autograd::grad({loss_of(fused.tensor(), fused_normalized)}, leaves);
  const auto plain = c.expected_sum();
  const auto plain_grads = torch::autograd::grad({loss_of(plain, c.norm(plain))}, leaves);
  for (size_t i = 0; i < leaves.size(); ++i)
    EXPECT_LT((fused_grads[i] - plain_grads[i]).abs().max().item<double>(), 1e-4) << i;
}

// Dropout in the branch, training: the add keeps it, as x + drop(layer(input)).
TEST(Residual, ADroppedBranchIsAddedWithItsDropout) {
  Case c;
  torch::NoGradGuard no_grad;
  c.drop->train();
  torch::manual_seed(11);
  const auto sum = (Residual(c.x) + c.branch()).tensor();
  torch::manual_seed(11);
  const auto expected = c.x + c.drop(c.layer(c.input));
  EXPECT_TRUE(torch::allclose(sum, expected, 1e-5, 1e-5));
  EXPECT_FALSE(torch::allclose(sum, c.expected_sum(), 1e-3, 1e-3));  // something was dropped
}

TEST(Residual, AnUnsetStreamIsANamedError) {
  EXPECT_EQ(testing::error_of([] { Residual().tensor(); }),
            "residual stream: read before it was set");
}

}  // namespace
}  // namespace vit
