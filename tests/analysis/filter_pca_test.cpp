#include "vit/analysis/filter_pca.hpp"

#include <cmath>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "error_of.hpp"
#include "tensor_values.hpp"

namespace vit {
// Named, not anonymous: the unity build compiles this file with others that
// have helpers of the same names.
namespace filter_pca_test {

using testing::error_of;

torch::Tensor rows(const std::vector<double>& v, int64_t d) {
  return torch::tensor(v, torch::kDouble).view({d, -1});
}

bool near(const torch::Tensor& a, const torch::Tensor& b, double tol = 1e-9) {
  return testing::near(a, b, tol);
}

// Rows (3,0), (-3,0), (0,1), (0,-1): mean 0, covariance X^T X / (D-1) = diag(18, 2) / 3,
// so the components are the axes with variances 6 and 2/3, shares 0.9 and 0.1.
TEST(FilterPca, HandComputedAxes) {
  const auto pca = filter_pca(rows({3, 0, -3, 0, 0, 1, 0, -1}, 4), /*count=*/5);
  EXPECT_TRUE(near(pca.components, rows({1, 0, 0, 1}, 2))) << pca.components;
  EXPECT_TRUE(near(pca.explained_variance, torch::tensor({6.0, 2.0 / 3.0}, torch::kDouble)));
  EXPECT_TRUE(near(pca.explained_variance_ratio, torch::tensor({0.9, 0.1}, torch::kDouble)));
}

// The mean filter is subtracted first: shifting every row changes nothing.
TEST(FilterPca, CentresOverTheRows) {
  const auto shifted =
      rows({3, 0, -3, 0, 0, 1, 0, -1}, 4) + torch::tensor({5.0, -7.0}, torch::kDouble);
  const auto pca = filter_pca(shifted, 2);
  EXPECT_TRUE(near(pca.components, rows({1, 0, 0, 1}, 2))) << pca.components;
  EXPECT_NEAR(pca.explained_variance_ratio[0].item<double>(), 0.9, 1e-12);
}

// Rows along (2, 1) only: one direction with all the variance, and the orthogonal
// one with none; each component's largest entry comes out positive.
TEST(FilterPca, SignsAreCanonicalAndRankIsRespected) {
  const auto pca = filter_pca(rows({2, 1, -2, -1, 4, 2, -4, -2}, 4), 2);
  const double s = std::sqrt(5.0);
  EXPECT_TRUE(near(pca.components, rows({2 / s, 1 / s, -1 / s, 2 / s}, 2), 1e-9)) << pca.components;
  EXPECT_TRUE(near(pca.explained_variance_ratio, torch::tensor({1.0, 0.0}, torch::kDouble)));
  EXPECT_NEAR(pca.explained_variance[0].item<double>(), (5 + 5 + 20 + 20) / 3.0, 1e-9);
}

// A (D, C, P, P) convolution weight is read as timm flattens it; at most D - 1
// components have variance.
TEST(FilterPca, ConvWeightsAreFlattenedAndCountIsCapped) {
  torch::manual_seed(0);
  const auto weight = torch::randn({5, 3, 2, 2});
  const auto pca = filter_pca(weight, 28);
  ASSERT_EQ(pca.components.sizes(), (std::vector<int64_t>{4, 12}));
  const auto gram = pca.components.matmul(pca.components.t());
  EXPECT_TRUE(near(gram, torch::eye(4, torch::kDouble), 1e-9)) << gram;
  const auto variance = pca.explained_variance;
  for (int64_t i = 1; i < 4; ++i)
    EXPECT_GE(variance[i - 1].item<double>(), variance[i].item<double>());
  EXPECT_NEAR(pca.explained_variance_ratio.sum().item<double>(), 1.0, 1e-9);
  EXPECT_TRUE(near(filter_pca(weight.reshape({5, 12}), 28).components, pca.components));
}

TEST(FilterPca, BadInputsAreClearErrors) {
  EXPECT_EQ(error_of([] {
              filter_pca(torch::zeros({1, 3, 4, 4}), 3);
            }),
            "filter PCA: weight is [1, 3, 4, 4]; expected patch_embed.proj.weight (D, C, P, P) "
            "with D >= 2 filters");
  EXPECT_EQ(error_of([] {
              filter_pca(torch::zeros({4, 3, 4}), 3);
            }),
            "filter PCA: weight is [4, 3, 4]; expected patch_embed.proj.weight (D, C, P, P) with "
            "D >= 2 filters");
  EXPECT_EQ(error_of([] {
              filter_pca(torch::zeros({4, 3}), 0);
            }),
            "filter PCA: count 0 is not >= 1");
}

// Identical filters have no variance: zero shares, not NaN.
TEST(FilterPca, IdenticalFiltersGiveZeroShares) {
  const auto pca = filter_pca(torch::ones({3, 4}), 2);
  EXPECT_TRUE(near(pca.explained_variance_ratio, torch::zeros({2}, torch::kDouble)));
}

}  // namespace filter_pca_test
}  // namespace vit
