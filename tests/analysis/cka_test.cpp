#include "vit/analysis/cka.hpp"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "../weights/small_model.hpp"
#include "error_of.hpp"
#include "image_batches_helper.hpp"

namespace vit {
namespace {

using testing::error_of;

TEST(Cka, OneDimensionalFeaturesGiveTheSquaredCorrelation) {
  // Xc = (-1, 0, 1), Yc = (-7, -1, 8) / 3: <Xc, Yc>^2 / (|Xc|^2 |Yc|^2) = 25 / (2 * 114 / 9).
  const auto x = torch::tensor({1.0, 2.0, 3.0}).view({3, 1});
  const auto y = torch::tensor({2.0, 4.0, 7.0}).view({3, 1});
  EXPECT_NEAR(linear_cka(centred_gram(x), centred_gram(y)), 225.0 / 228.0, 1e-12);
  // (1, 0, 1) centres to (1, -2, 1) / 3, orthogonal to (-1, 0, 1).
  const auto z = torch::tensor({1.0, 0.0, 1.0}).view({3, 1});
  EXPECT_NEAR(linear_cka(centred_gram(x), centred_gram(z)), 0.0, 1e-12);
}

TEST(Cka, ARepresentationWithItselfIsOne) {
  torch::manual_seed(0);
  const auto x = torch::randn({20, 7, 5});  // (n, T, D): flattened per image
  const auto gram = centred_gram(x);
  EXPECT_EQ(gram.sizes(), (std::vector<int64_t>{20, 20}));
  EXPECT_NEAR(linear_cka(gram, gram), 1.0, 1e-12);
}

TEST(Cka, InvariantToOrthogonalTransformsAndIsotropicScaling) {
  torch::manual_seed(1);
  const auto x = torch::randn({30, 12}, torch::kDouble);
  const auto other = torch::randn({30, 8}, torch::kDouble);
  const auto q = std::get<0>(torch::linalg_qr(torch::randn({12, 12}, torch::kDouble)));
  const auto moved = 3.5 * torch::mm(x, q) + 2.0;  // rotated, scaled and shifted
  EXPECT_NEAR(linear_cka(centred_gram(x), centred_gram(moved)), 1.0, 1e-10);
  EXPECT_NEAR(linear_cka(centred_gram(x), centred_gram(other)),
              linear_cka(centred_gram(moved), centred_gram(other)), 1e-10);
  // Not invariant to an anisotropic scaling: the check can fail.
  const auto stretched = x * torch::linspace(0.1, 10, 12, torch::kDouble);
  EXPECT_LT(linear_cka(centred_gram(x), centred_gram(stretched)), 0.95);
}

TEST(Cka, AConstantRepresentationScoresZero) {
  const auto constant = torch::ones({5, 3});
  const auto varied = torch::arange(15, torch::kFloat).view({5, 3}).pow(2);
  EXPECT_EQ(linear_cka(centred_gram(constant), centred_gram(varied)), 0.0);
}

TEST(Cka, RejectsBadShapes) {
  EXPECT_NE(error_of([] {
              centred_gram(torch::ones({1, 4}));
            }).find("at least two images"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              linear_cka(torch::eye(3, torch::kDouble), torch::eye(4, torch::kDouble));
            }).find("expected the same (n, n)"),
            std::string::npos);
}

TEST(Cka, ModelMatrixIsSymmetricWithAUnitDiagonalWhateverTheBudget) {
  const Config c = testing::small_config();
  auto model = testing::seeded_model(c.model, 3);
  torch::manual_seed(4);
  const auto images = torch::randn({9, 3, 16, 16});
  const auto grams = layer_grams(model, testing::batches_of(images, 4));
  ASSERT_EQ(grams.size(), 3u);  // layers 0..2
  const auto matrix = cka_matrix(grams, grams);
  EXPECT_TRUE(torch::allclose(matrix, matrix.t(), 0, 1e-12));
  EXPECT_TRUE(torch::allclose(matrix.diagonal(), torch::ones({3}, torch::kDouble), 0, 1e-9));
  EXPECT_LT(matrix[0][2].item<double>(), 1.0 - 1e-6);  // the blocks change the representation
  // A budget of one byte holds one layer's features at a time: the same Grams.
  const auto one_at_a_time = layer_grams(model, testing::batches_of(images, 2), /*budget_bytes=*/1);
  for (size_t l = 0; l < grams.size(); ++l)
    EXPECT_TRUE(torch::allclose(grams[l], one_at_a_time[l], 1e-6, 1e-6)) << "layer " << l;
}

}  // namespace
}  // namespace vit
