#include "vit/analysis/pos_embed_similarity.hpp"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "error_of.hpp"

namespace vit {
namespace {

// A 2x2 grid with D = 2 and hand-picked embeddings: patch (0,0) = (1, 0),
// (0,1) = (0, 2), (1,0) = (-3, 0), (1,1) = (1, 1); class token (5, 5).
torch::Tensor two_by_two() {
  return torch::tensor({5.0, 5.0, 1.0, 0.0, 0.0, 2.0, -3.0, 0.0, 1.0, 1.0}, torch::kDouble)
      .reshape({1, 5, 2});
}

TEST(PosEmbedSimilarity, HandWorkedTwoByTwoGrid) {
  const double h = 1.0 / std::sqrt(2.0);
  const auto expected = torch::tensor({1.0, 0.0, -1.0, h,   //
                                       0.0, 1.0, 0.0, h,    //
                                       -1.0, 0.0, 1.0, -h,  //
                                       h, h, -h, 1.0},
                                      torch::kDouble)
                            .reshape({4, 4});
  const auto similarity = pos_embed_similarity(two_by_two());
  ASSERT_EQ(similarity.scalar_type(), torch::kDouble);
  EXPECT_TRUE(torch::allclose(similarity, expected, 0, 1e-12)) << similarity;
}

TEST(PosEmbedSimilarity, LeavesOutTheClassTokenAndGivesZeroForAZeroEmbedding) {
  auto pos = two_by_two();
  pos[0][1].zero_();  // patch (0, 0)
  const auto similarity = pos_embed_similarity(pos.to(torch::kFloat));
  EXPECT_EQ(similarity.sizes(), (std::vector<int64_t>{4, 4}));
  EXPECT_EQ(similarity.scalar_type(), torch::kFloat);
  EXPECT_TRUE(torch::equal(similarity[0], torch::zeros({4})));
  EXPECT_NEAR(similarity[1][1].item<float>(), 1.0f, 1e-6);
}

TEST(PosEmbedSimilarity, RejectsAnEmbeddingWithoutASquareGrid) {
  EXPECT_EQ(testing::error_of([] {
              pos_embed_similarity(torch::zeros({1, 4, 8}));
            }),
            "pos_embed: shape [1, 4, 8] has 3 patch tokens after the class token, which is not a "
            "square grid g*g");
}

}  // namespace
}  // namespace vit
