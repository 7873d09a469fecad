// analysis/sae_features on an SAE whose features are known exactly (+e_i and
// -e_i): how often each fires, its mean where it fires, and its strongest
// images and patches, all against the layer's tokens read directly.
#include "vit/analysis/sae_features.hpp"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "../weights/small_model.hpp"
#include "error_of.hpp"
#include "image_batches_helper.hpp"
#include "signed_basis_sae.hpp"

namespace vit {
namespace {

TEST(SaeFeatures, CountEveryFeatureAndFindItsStrongestImagesAndPatches) {
  ModelConfig m = testing::small_config().model;
  m.registers = 1;
  VisionTransformer model = testing::seeded_model(m, 3);
  torch::manual_seed(4);
  const auto images = testing::batches_of(torch::randn({7, 3, 16, 16}), 3);
  const auto sae = testing::signed_basis(32);
  const auto s = sae_feature_statistics(model, sae, /*layer=*/1, images, /*examples=*/4);

  const auto tokens = layer_patch_tokens(model, 1, images).to(torch::kDouble);  // (7 * 16, 32)
  const auto z = torch::cat({tokens.clamp_min(0), (-tokens).clamp_min(0)}, 1);  // (n, 64)
  EXPECT_EQ(s.tokens, 7 * 16);
  EXPECT_TRUE(torch::allclose(s.frequency, z.gt(0).to(torch::kDouble).mean(0), 0, 1e-12));
  const auto fired = z.gt(0).sum(0).to(torch::kDouble);
  EXPECT_TRUE(torch::allclose(s.mean_activation, z.sum(0) / fired.clamp_min(1), 1e-5, 1e-5));

  // Each feature's strongest patch in each image, then the 4 strongest images.
  const auto per_image = z.view({7, 16, 64});
  const auto [strongest, patch] = per_image.max(1);  // (7, 64)
  const auto [top, image] = strongest.topk(4, 0);    // (4, 64)
  ASSERT_EQ(s.top_activation.sizes(), (c10::IntArrayRef{4, 64}));
  for (int64_t f = 0; f < 64; ++f) {
    for (int64_t r = 0; r < 4; ++r) {
      if (top[r][f].item<double>() <= 0) {  // fired on fewer than 4 images
        EXPECT_EQ(s.top_image[r][f].item<int64_t>(), -1);
        continue;
      }
      const int64_t i = image[r][f].item<int64_t>();
      EXPECT_EQ(s.top_image[r][f].item<int64_t>(), i) << "feature " << f << " rank " << r;
      EXPECT_EQ(s.top_patch[r][f].item<int64_t>(), patch[i][f].item<int64_t>());
      EXPECT_NEAR(s.top_activation[r][f].item<double>(), top[r][f].item<double>(), 1e-5);
    }
  }
  // The most frequent first; a feature that never fires is never listed.
  const auto order = most_frequent_features(s, 5);
  ASSERT_EQ(order.size(), 5u);
  for (size_t i = 1; i < order.size(); ++i)
    EXPECT_GE(s.frequency[order[i - 1]].item<double>(), s.frequency[order[i]].item<double>());
  EXPECT_EQ(s.frequency[order[0]].item<double>(), s.frequency.max().item<double>());
}

TEST(SaeFeatures, MoreExamplesThanImagesAndSilentFeaturesAreMarked) {
  ModelConfig m = testing::small_config().model;
  VisionTransformer model = testing::seeded_model(m, 3);
  torch::manual_seed(5);
  const auto images = testing::batches_of(torch::randn({2, 3, 16, 16}), 2);
  auto sae = testing::signed_basis(32);
  sae.b_enc.slice(0, 0, 3).fill_(-1e6);  // features 0..2 can never fire
  const auto s = sae_feature_statistics(model, sae, 0, images, /*examples=*/5);
  EXPECT_EQ(s.top_image.size(0), 5);
  for (int64_t f = 0; f < 3; ++f) {
    EXPECT_EQ(s.frequency[f].item<double>(), 0.0);
    EXPECT_EQ(s.top_image[0][f].item<int64_t>(), -1);
  }
  EXPECT_EQ(s.top_image[2][40].item<int64_t>(), -1);  // only 2 images
  EXPECT_EQ(s.top_activation[2][40].item<double>(), 0.0);
  const auto all = most_frequent_features(s, 64);
  EXPECT_EQ(std::count_if(all.begin(), all.end(), [](int64_t f) { return f < 3; }), 0);
}

TEST(SaeFeatures, AnotherWidthOrLayerIsAnError) {
  ModelConfig m = testing::small_config().model;
  VisionTransformer model = testing::seeded_model(m, 3);
  const auto images = testing::batches_of(torch::randn({2, 3, 16, 16}), 2);
  EXPECT_NE(testing::error_of([&] {
              sae_feature_statistics(model, testing::signed_basis(16), 1, images, 2);
            }).find("an SAE of width 16 on a model of width 32"),
            std::string::npos);
  EXPECT_NE(testing::error_of([&] {
              sae_feature_statistics(model, testing::signed_basis(32), 3, images, 2);
            }).find("layer 3, expected 0..2"),
            std::string::npos);
}

}  // namespace
}  // namespace vit
