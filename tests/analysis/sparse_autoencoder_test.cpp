// The sparse autoencoder (analysis/sparse_autoencoder): exact on a dictionary
// it can represent, TopK's sparsity by construction, the L1 penalty's, dead
// features resampled, and the spliced cross-entropies at their two ends: a
// perfect reconstruction recovers all of the loss, a zero one none.
#include "vit/analysis/sparse_autoencoder.hpp"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "../weights/small_model.hpp"
#include "error_of.hpp"
#include "image_batches_helper.hpp"
#include "signed_basis_sae.hpp"

namespace vit::sparse_autoencoder_test {
namespace {

// Tokens made of 2 of 12 unit directions in 8 dimensions, with positive sizes.
at::Tensor sparse_tokens(int64_t n) {
  torch::manual_seed(21);
  auto dictionary = torch::randn({12, 8});
  dictionary /= dictionary.norm(2, {1}, true);
  const auto first = torch::randint(0, 12, {n}), second = (first + torch::randint(1, 12, {n})) % 12;
  const auto sizes = torch::rand({n, 2}) + 0.5;
  return dictionary.index_select(0, first) * sizes.select(1, 0).unsqueeze(1) +
         dictionary.index_select(0, second) * sizes.select(1, 1).unsqueeze(1);
}

TEST(SparseAutoencoder, ASignedBasisReconstructsExactly) {
  const auto sae = testing::signed_basis(6);
  torch::manual_seed(2);
  const auto x = torch::randn({50, 6});
  EXPECT_TRUE(torch::allclose(sae.decode(sae.encode(x)), x, 1e-6, 1e-6));
  const SaeQuality q = sae_quality(sae, x);
  EXPECT_NEAR(q.explained_variance, 1.0, 1e-9);
  EXPECT_NEAR(q.l0, 6.0, 1e-9);  // one side of each axis
  EXPECT_NEAR(q.dead_fraction, 0.0, 1e-12);
  // Feature i fires where x_i > 0, feature D + i where x_i < 0.
  const auto positive = x.gt(0).to(torch::kDouble).mean(0);
  EXPECT_TRUE(torch::allclose(q.frequency, torch::cat({positive, 1 - positive}), 0, 1e-12));
}

TEST(SparseAutoencoder, TheDecoderBiasStartsAtTheTokensMeanUnlessAnSaeGoesOn) {
  const auto tokens = sparse_tokens(512) + 3;
  SaeTraining training;
  training.epochs = 1;
  training.batch = 512;
  training.lr = 1e-6;  // one step that barely moves b_dec
  auto fresh = SparseAutoencoder::random(8, 24, 2, 1);
  train_sae(fresh, tokens, training);
  EXPECT_TRUE(torch::allclose(fresh.b_dec, tokens.mean(0), 0, 1e-5));
  auto going_on = SparseAutoencoder::random(8, 24, 2, 1);
  going_on.b_dec.fill_(-7);
  training.centre_decoder_bias = false;
  train_sae(going_on, tokens, training);
  EXPECT_TRUE(torch::allclose(going_on.b_dec, torch::full({8}, -7.0), 0, 1e-5));
}

TEST(SparseAutoencoder, TopKLearnsASparseDictionaryWithKFeaturesAToken) {
  const auto tokens = sparse_tokens(4000);
  auto sae = SparseAutoencoder::random(8, 24, /*k=*/2, /*seed=*/1);
  SaeTraining training;
  training.epochs = 30;
  training.batch = 256;
  training.lr = 3e-3;
  const auto report = train_sae(sae, tokens, training);
  EXPECT_EQ(report.steps, 30 * 16);
  EXPECT_LT(report.epoch_losses.back(), 0.2 * report.epoch_losses.front());
  const SaeQuality q = sae_quality(sae, tokens);
  EXPECT_GT(q.explained_variance, 0.9);
  EXPECT_LE(q.l0, 2.0);
  EXPECT_TRUE(torch::allclose(sae.W_dec.norm(2, {1}), torch::ones({24}), 1e-5, 1e-5));
  EXPECT_FALSE(sae.W_dec.requires_grad());
}

TEST(SparseAutoencoder, TheL1PenaltyMakesAReluSaeSparser) {
  const auto tokens = sparse_tokens(2000);
  const auto l0_with = [&](double l1) {
    auto sae = SparseAutoencoder::random(8, 24, /*k=*/0, /*seed=*/1);
    SaeTraining training;
    training.epochs = 10;
    training.batch = 256;
    training.lr = 3e-3;
    training.l1 = l1;
    training.resample_dead = false;  // revived features would blur the comparison
    train_sae(sae, tokens, training);
    return sae_quality(sae, tokens).l0;
  };
  // 9.5 and 6.0 features a token at 0 and 1 with this seed (each token is made of 2).
  const double none = l0_with(0.0), some = l0_with(1.0), more = l0_with(3.0);
  EXPECT_LT(some, 0.75 * none);
  EXPECT_LT(more, 0.75 * some);
}

TEST(SparseAutoencoder, DeadFeaturesAreResampledAndFireAgain) {
  const auto tokens = sparse_tokens(2000);
  auto sae = SparseAutoencoder::random(8, 24, /*k=*/0, /*seed=*/1);
  sae.b_enc.slice(0, 0, 6).fill_(-100);  // six features that cannot fire
  SaeTraining training;
  training.epochs = 3;
  training.batch = 256;
  const auto report = train_sae(sae, tokens, training);
  EXPECT_GE(report.resampled, 6);
  ASSERT_EQ(report.epoch_resampled.size(), 3u);
  EXPECT_GE(report.epoch_resampled[0], 6);
  EXPECT_EQ(report.epoch_resampled[2], 0);  // never after the last epoch
  EXPECT_EQ(report.epoch_resampled[0] + report.epoch_resampled[1], report.resampled);
  EXPECT_EQ(sae.b_enc.slice(0, 0, 6).lt(-50).sum().item<int64_t>(), 0);
  SaeTraining keep = training;
  keep.resample_dead = false;
  auto unresampled = SparseAutoencoder::random(8, 24, 0, 1);
  unresampled.b_enc.slice(0, 0, 6).fill_(-100);
  EXPECT_EQ(train_sae(unresampled, tokens, keep).resampled, 0);
  EXPECT_GE(sae_quality(unresampled, tokens).dead_fraction, 6.0 / 24);
}

TEST(SparseAutoencoder, SplicingAPerfectReconstructionRecoversAllOfTheLossAndZerosNone) {
  ModelConfig m = testing::small_config().model;
  m.registers = 2;
  m.pool = Pool::kMean;
  VisionTransformer model = testing::seeded_model(m, 7);
  torch::manual_seed(8);
  const auto images = testing::batches_of(torch::randn({5, 3, 16, 16}), 2);
  const auto labels = torch::tensor({0, 1, 2, 3, 4});
  const auto tokens = layer_patch_tokens(model, 1, images);
  EXPECT_EQ(tokens.sizes(), torch::IntArrayRef({5 * 16, 32}));  // patches only
  const auto perfect = spliced_losses(model, testing::signed_basis(32), 1, images, labels);
  EXPECT_NEAR(perfect.spliced, perfect.clean, 1e-5);
  EXPECT_NEAR(perfect.recovered, 1.0, 1e-4);
  EXPECT_GT(std::abs(perfect.zero_ablated - perfect.clean), 1e-3);
  auto nothing = testing::signed_basis(32);
  nothing.W_dec.zero_();
  const auto none = spliced_losses(model, nothing, 1, images, labels);
  EXPECT_NEAR(none.spliced, none.zero_ablated, 1e-9);
  EXPECT_NEAR(none.recovered, 0.0, 1e-9);
  EXPECT_NEAR(none.clean, perfect.clean, 1e-12);
  // After the last block too (the head reads the spliced tokens directly).
  EXPECT_NEAR(spliced_losses(model, testing::signed_basis(32), 2, images, labels).recovered, 1.0,
              1e-4);
  EXPECT_NE(testing::error_of([&] {
              layer_patch_tokens(model, 3, images);
            }).find("layer 3, expected 0..2"),
            std::string::npos);
}

TEST(SparseAutoencoder, BadShapesAreOneLineErrors) {
  EXPECT_NE(testing::error_of([] { SparseAutoencoder::random(8, 4, 5, 0); }).find("k 5"),
            std::string::npos);
  auto sae = SparseAutoencoder::random(8, 16, 2, 0);
  EXPECT_NE(testing::error_of([&] {
              train_sae(sae, torch::zeros({3, 7}), {});
            }).find("expected (n, 8)"),
            std::string::npos);
}

}  // namespace
}  // namespace vit::sparse_autoencoder_test
