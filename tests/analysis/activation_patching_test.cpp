// Activation and attribution patching (analysis/activation_patching) on a
// small seeded model, where some effects are known exactly: after the last
// block a cls-pooled head reads the class token alone, and a mean-pooled head
// reads each patch token additively; at layer 0 the class token and the
// registers are the same in both runs. Attribution patching is the first-order
// estimate, so for a small change it must agree with the real thing.
#include "vit/analysis/activation_patching.hpp"

#include <cmath>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "../weights/small_model.hpp"
#include "error_of.hpp"
#include "vit/analysis/residual_stream.hpp"

namespace vit::activation_patching_test {
namespace {

// 16 px in 4 px patches: 16 patches, D 32, 4 heads, 2 blocks, 5 classes.
VisionTransformer model_of(Pool pool, int64_t registers) {
  ModelConfig m = testing::small_config().model;
  m.pool = pool;
  m.registers = registers;
  return testing::seeded_model(m, 3);
}

at::Tensor images(int64_t seed) {
  torch::manual_seed(seed);
  return torch::randn({3, 3, 16, 16});
}

const at::Tensor kClean = torch::tensor({0, 1, 2}), kCorrupt = torch::tensor({3, 4, 0});

TEST(ActivationPatching, AfterTheLastBlockAClsHeadReadsTheClassTokenAlone) {
  auto model = model_of(Pool::kCls, 2);
  const auto r =
      activation_patching(model, images(1), images(2), kClean, kCorrupt, PatchMethod::kActivation);
  EXPECT_EQ(r.pairs, 3);
  ASSERT_EQ(r.residual.sizes(), torch::IntArrayRef({3, 19}));  // layers 0..2; 1 + 2 + 16 tokens
  ASSERT_EQ(r.heads.sizes(), torch::IntArrayRef({2, 4}));
  // (To fp32 rounding: the patched runs go as batches of another size.)
  EXPECT_NEAR(r.residual[2][0].item<double>(), 1.0, 1e-6);
  EXPECT_LT(r.residual[2].slice(0, 1).abs().max().item<double>(), 1e-6);
  // At layer 0 the class token and the registers are the same in both runs.
  EXPECT_LT(r.residual[0].slice(0, 0, 3).abs().max().item<double>(), 1e-6);
  EXPECT_GT(r.residual[0].slice(0, 3).abs().max().item<double>(), 0.01);
  EXPECT_FALSE(r.attribution_residual.defined());
  EXPECT_FALSE(r.attribution_heads.defined());
}

TEST(ActivationPatching, AfterTheLastBlockAMeanHeadSumsThePatchesAndIgnoresTheRegisters) {
  auto model = model_of(Pool::kMean, 2);
  const auto r =
      activation_patching(model, images(1), images(2), kClean, kCorrupt, PatchMethod::kBoth);
  const auto last = r.residual[2];
  EXPECT_LT(last.slice(0, 0, 3).abs().max().item<double>(), 1e-6);  // class token, registers
  EXPECT_NEAR(last.slice(0, 3).sum().item<double>(), 1.0, 1e-4);    // the 16 patches together
}

// Patching rests on running a layer's stream on to the end: every position
// of a layer copied from the clean run gives the clean logits (an effect of
// exactly 1), and none copied gives the corrupt ones (0), at every layer.
TEST(ActivationPatching, AWholeLayerPatchedIsTheCleanRunAndNothingPatchedTheCorrupt) {
  auto model = model_of(Pool::kCls, 1);
  const auto clean = images(1), corrupt = images(2);
  torch::NoGradGuard no_grad;
  const auto clean_logits = model->forward(clean), corrupt_logits = model->forward(corrupt);
  const auto metric = [](const at::Tensor& logits) {
    return logits.gather(1, kClean.unsqueeze(1)).squeeze(1) -
           logits.gather(1, kCorrupt.unsqueeze(1)).squeeze(1);
  };
  const auto gap = metric(clean_logits) - metric(corrupt_logits);
  const auto clean_stream = residual_stream(model, clean),
             corrupt_stream = residual_stream(model, corrupt);
  for (int64_t l = 0; l <= 2; ++l) {
    const auto all = logits_from_layer(model, clean_stream.layers[static_cast<size_t>(l)], l);
    const auto none = logits_from_layer(model, corrupt_stream.layers[static_cast<size_t>(l)], l);
    EXPECT_TRUE(torch::allclose(all, clean_logits, 1e-5, 1e-5)) << "layer " << l;
    EXPECT_TRUE(torch::allclose(none, corrupt_logits, 1e-5, 1e-5)) << "layer " << l;
    const auto effect_all = (metric(all) - metric(corrupt_logits)) / gap;
    const auto effect_none = (metric(none) - metric(corrupt_logits)) / gap;
    EXPECT_TRUE(torch::allclose(effect_all, torch::ones({3}), 0, 1e-4)) << "layer " << l;
    EXPECT_TRUE(torch::allclose(effect_none, torch::zeros({3}), 0, 1e-4)) << "layer " << l;
  }
}

// Its error is second order: it falls with the size of the change (0.064 at
// noise 0.03, 0.024 at 0.01 on this model, where the effects reach about 1).
TEST(ActivationPatching, AttributionAgreesWithPatchingAsTheChangeShrinks) {
  auto model = model_of(Pool::kCls, 0);
  const auto clean = images(4);
  torch::manual_seed(5);
  const auto noise = torch::randn_like(clean);
  const auto error_at = [&](double size) {
    const auto r = activation_patching(model, clean, clean + size * noise, kClean, kCorrupt,
                                       PatchMethod::kBoth);
    EXPECT_EQ(r.attribution_residual.sizes(), r.residual.sizes());
    EXPECT_EQ(r.attribution_heads.sizes(), r.heads.sizes());
    const auto real = torch::cat({r.residual.flatten(), r.heads.flatten()});
    const auto estimate =
        torch::cat({r.attribution_residual.flatten(), r.attribution_heads.flatten()});
    EXPECT_GT(pearson_correlation(real, estimate), 0.9999) << size;
    EXPECT_GT(real.abs().max().item<double>(), 0.5) << size;  // effects worth comparing
    return (real - estimate).abs().max().item<double>();
  };
  const double coarse = error_at(0.03), fine = error_at(0.01);
  EXPECT_LT(fine, 0.03);
  EXPECT_LT(fine, 0.5 * coarse);
  // The same activation patching as the method alone.
  const auto both =
      activation_patching(model, clean, clean + 0.01 * noise, kClean, kCorrupt, PatchMethod::kBoth);
  const auto alone = activation_patching(model, clean, clean + 0.01 * noise, kClean, kCorrupt,
                                         PatchMethod::kActivation);
  EXPECT_TRUE(torch::allclose(alone.residual, both.residual, 0, 1e-12));
  EXPECT_FALSE(alone.attribution_residual.defined());
}

TEST(ActivationPatching, BadPairsAreOneLineErrors) {
  auto model = model_of(Pool::kCls, 0);
  EXPECT_EQ(testing::error_of([&] {
              activation_patching(model, images(1), images(2), kClean, torch::tensor({3, 1, 0}),
                                  PatchMethod::kActivation);
            }),
            "activation patching: pair 1 has label 1 for both images; expected two different "
            "classes");
  EXPECT_NE(testing::error_of([&] {
              activation_patching(model, images(1), images(2).slice(0, 0, 2), kClean, kCorrupt,
                                  PatchMethod::kActivation);
            }).find("expected two (n, C, S, S) of one shape"),
            std::string::npos);
  EXPECT_NE(testing::error_of([&] {
              activation_patching(model, images(1), images(1), kClean, kCorrupt,
                                  PatchMethod::kActivation);
            }).find("nothing to normalise by"),
            std::string::npos);
}

TEST(PearsonCorrelation, IsOneMinusOneOrNaN) {
  const auto x = torch::tensor({1.0, 2.0, 3.0, 5.0});
  EXPECT_NEAR(pearson_correlation(x, 2 * x + 1), 1.0, 1e-12);
  EXPECT_NEAR(pearson_correlation(x, -x), -1.0, 1e-12);
  EXPECT_NEAR(pearson_correlation(x, torch::tensor({1.0, 3.0, 2.0, 4.0})), 0.83152, 1e-5);
  EXPECT_TRUE(std::isnan(pearson_correlation(x, torch::ones({4}))));
}

}  // namespace
}  // namespace vit::activation_patching_test
