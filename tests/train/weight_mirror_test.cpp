// The weight mirror against plain autocast: the same bf16 training steps to
// the bit, the substitution confined to its scope, and frozen parameters left
// to autocast.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "error_of.hpp"
#include "synthetic.hpp"
#include "tensor_values.hpp"
#include "vit/infer/precision.hpp"
#include "vit/model/weight_substitution.hpp"
#include "vit/train/optimizer.hpp"
#include "vit/train/weight_mirror.hpp"

namespace vit {
namespace {

ModelConfig mirror_model_config() {
  auto config = testing::texture_config().model;
  config.depth = 2;  // two blocks, so the blocks' weights are told apart
  return config;
}

VisionTransformer seeded_model() {
  torch::manual_seed(5);
  return VisionTransformer(mirror_model_config());
}

// One bf16 step of `model` on a fixed batch; with `mirror`, through it.
void bf16_step(VisionTransformer& model, Optimizer& optimizer, WeightMirror* mirror, int64_t seed) {
  torch::manual_seed(seed);
  const auto images = torch::randn({6, 1, 8, 8});
  const auto labels = torch::randint(0, 4, {6});
  optimizer.zero_grad();
  if (mirror) mirror->refresh();
  torch::Tensor logits;
  {
    AutocastScope autocast(Precision::kBf16, torch::kCPU);
    std::optional<WeightSubstitution> substitution;
    if (mirror) substitution.emplace(mirror->substitutes());
    logits = model->forward(images);
  }
  torch::nn::functional::cross_entropy(logits.to(torch::kFloat), labels).backward();
  if (mirror) mirror->collect_gradients();
  optimizer.step(1e-2);
}

TEST(WeightMirror, TrainsExactlyAsAutocastDoes) {
  auto plain = seeded_model();
  auto mirrored = seeded_model();
  auto plain_optimizer = make_optimizer(plain, testing::texture_config().train);
  auto mirrored_optimizer = make_optimizer(mirrored, testing::texture_config().train);
  WeightMirror mirror(mirrored, *mirrored_optimizer, torch::kBFloat16);
  ASSERT_TRUE(torch::equal(plain_optimizer->values(), mirrored_optimizer->values()));
  const auto initial = plain_optimizer->values().clone();
  for (int64_t step = 0; step < 3; ++step) {
    bf16_step(plain, *plain_optimizer, nullptr, 10 + step);
    bf16_step(mirrored, *mirrored_optimizer, &mirror, 10 + step);
    // Bit for bit: the same rounding of each weight, the same low-precision
    // gradients widened to fp32.
    EXPECT_TRUE(torch::equal(plain_optimizer->gradients(), mirrored_optimizer->gradients()))
        << "step " << step;
    EXPECT_TRUE(torch::equal(plain_optimizer->values(), mirrored_optimizer->values()))
        << "step " << step;
  }
  // The steps did train: the weights moved.
  EXPECT_GT((plain_optimizer->values() - initial).abs().max().item<float>(), 1e-3f);
}

TEST(WeightMirror, SubstitutesEveryMatrixWeightAndNothingElse) {
  auto model = seeded_model();
  auto optimizer = make_optimizer(model, testing::texture_config().train);
  WeightMirror mirror(model, *optimizer, torch::kBFloat16);
  // Per block qkv, proj, fc1, fc2 with biases; the patch convolution and the
  // head with theirs. The LayerNorms, the class token and the position
  // embedding stay fp32 under autocast and are not substituted.
  EXPECT_EQ(mirror.substitutes().size(), 2u * 4u * 2u + 2u + 2u);
  for (const auto& named : model->named_parameters()) {
    const bool substituted = mirror.substitutes().count(named.value().unsafeGetTensorImpl()) > 0;
    const bool matrix_product = named.key().find("norm") == std::string::npos &&
                                named.key() != "cls_token" && named.key() != "pos_embed";
    EXPECT_EQ(substituted, matrix_product) << named.key();
  }
  mirror.refresh();
  const auto& head_weight = model->head->weight;
  const auto& copy = mirror.substitutes().at(head_weight.unsafeGetTensorImpl());
  EXPECT_EQ(copy.scalar_type(), torch::kBFloat16);
  EXPECT_TRUE(torch::equal(copy, head_weight.to(torch::kBFloat16)));
  EXPECT_TRUE(copy.is_leaf());
}

TEST(WeightMirror, GradientsReachTheOptimizerOnlyWhenCollected) {
  auto model = seeded_model();
  auto optimizer = make_optimizer(model, testing::texture_config().train);
  WeightMirror mirror(model, *optimizer, torch::kBFloat16);
  optimizer->zero_grad();
  mirror.refresh();
  {
    AutocastScope autocast(Precision::kBf16, torch::kCPU);
    WeightSubstitution substitution(mirror.substitutes());
    model->forward(torch::randn({2, 1, 8, 8})).to(torch::kFloat).sum().backward();
  }
  // The fp32 head weight took no part in the forward pass: its gradient
  // is still the zero of zero_grad, while LayerNorm's came straight in.
  EXPECT_EQ(model->head->weight.grad().abs().sum().item<float>(), 0.0f);
  EXPECT_GT(model->norm->weight.grad().abs().sum().item<float>(), 0.0f);
  mirror.collect_gradients();
  EXPECT_GT(model->head->weight.grad().abs().sum().item<float>(), 0.0f);
}

TEST(WeightMirror, FrozenParametersAreNotMirrored) {
  auto model = seeded_model();
  auto train = testing::texture_config().train;
  model->patch_embed->proj->weight.set_requires_grad(false);
  model->patch_embed->proj->bias.set_requires_grad(false);
  auto optimizer = make_optimizer(model, train);
  WeightMirror mirror(model, *optimizer, torch::kBFloat16);
  EXPECT_EQ(mirror.substitutes().count(model->patch_embed->proj->weight.unsafeGetTensorImpl()), 0u);
  EXPECT_EQ(mirror.substitutes().size(), 2u * 4u * 2u + 2u);
}

// Every parameter mirrored and no autocast (train.bf16_activations on CUDA):
// the model computes in bf16 from end to end, near the fp32 model, and every
// gradient reaches the fp32 optimizer through the mirror.
TEST(WeightMirror, MirroringEveryParameterRunsTheModelInBf16NearFp32) {
  auto reference = seeded_model();
  auto model = seeded_model();
  auto optimizer = make_optimizer(model, testing::texture_config().train);
  WeightMirror mirror(model, *optimizer, torch::kBFloat16, MirrorScope::kAllParameters);
  EXPECT_EQ(mirror.substitutes().size(), model->parameters().size());
  torch::manual_seed(3);
  const auto images = torch::randn({8, 1, 8, 8});
  const auto labels = torch::randint(0, 4, {8});
  const auto reference_logits = reference->forward(images);
  torch::nn::functional::cross_entropy(reference_logits, labels).backward();

  optimizer->zero_grad();
  mirror.refresh();
  torch::Tensor logits;
  {
    WeightSubstitution substitution(mirror.substitutes());
    logits = model->forward(images.to(torch::kBFloat16));
  }
  EXPECT_EQ(logits.scalar_type(), torch::kBFloat16);
  EXPECT_LT(testing::relative_error(logits, reference_logits), 2e-2);
  torch::nn::functional::cross_entropy(logits.to(torch::kFloat), labels).backward();
  // (On the CPU our kernels add some biases from their fp32 parameters, whose
  // gradients arrive directly; CudaTest checks that none does on a GPU.)
  mirror.collect_gradients();
  const auto expected = reference->named_parameters();
  for (const auto& p : model->named_parameters())
    EXPECT_LT(testing::relative_error(p.value().grad(), expected[p.key()].grad()), 5e-2) << p.key();
}

// Frozen parameters (train.freeze) get a bf16 copy too when every parameter
// is mirrored, or an fp32 weight would meet bf16 activations with no
// autocast to cast it; each refresh re-reads them, as resuming loads them.
TEST(WeightMirror, MirroringEveryParameterCopiesTheFrozenOnesWithoutGradients) {
  auto model = seeded_model();
  auto& frozen = model->patch_embed->proj->weight;
  frozen.set_requires_grad(false);
  auto optimizer = make_optimizer(model, testing::texture_config().train);
  WeightMirror mirror(model, *optimizer, torch::kBFloat16, MirrorScope::kAllParameters);
  EXPECT_EQ(mirror.substitutes().size(), model->parameters().size());
  const auto& copy = mirror.substitutes().at(frozen.unsafeGetTensorImpl());
  EXPECT_EQ(copy.scalar_type(), torch::kBFloat16);
  EXPECT_FALSE(copy.requires_grad());
  {
    torch::NoGradGuard no_grad;
    frozen.mul_(2);  // as a resumed checkpoint's values would
  }
  optimizer->zero_grad();
  mirror.refresh();
  EXPECT_TRUE(torch::equal(copy, frozen.to(torch::kBFloat16)));
  torch::Tensor logits;
  {
    WeightSubstitution substitution(mirror.substitutes());
    logits = model->forward(torch::randn({2, 1, 8, 8}).to(torch::kBFloat16));
  }
  EXPECT_EQ(logits.scalar_type(), torch::kBFloat16);
  logits.to(torch::kFloat).sum().backward();
  mirror.collect_gradients();
  EXPECT_FALSE(frozen.grad().defined());
  EXPECT_GT(model->patch_embed->proj->bias.grad().abs().sum().item<float>(), 0.0f);
}

TEST(Bf16EndToEnd, RunsUnderBf16OnCudaWhereAskedFor) {
  const c10::Device cuda("cuda:0");
  EXPECT_TRUE(runs_bf16_end_to_end(Precision::kBf16, cuda, true));
  EXPECT_FALSE(runs_bf16_end_to_end(Precision::kBf16, cuda, false));
  EXPECT_FALSE(runs_bf16_end_to_end(Precision::kFp16, cuda, true));
  EXPECT_FALSE(runs_bf16_end_to_end(Precision::kFp32, cuda, true));
  EXPECT_FALSE(runs_bf16_end_to_end(Precision::kBf16, torch::kCPU, true));
}

TEST(AutocastDtype, NamesTheMirrorsTypeForEachPrecision) {
  EXPECT_FALSE(autocast_dtype(Precision::kFp32).has_value());
  EXPECT_EQ(autocast_dtype(Precision::kBf16), torch::kBFloat16);
  EXPECT_EQ(autocast_dtype(Precision::kFp16), torch::kHalf);
  EXPECT_EQ(testing::error_of([] { autocast_dtype(Precision::kAuto); }),
            "precision auto has no autocast type: resolve it with choose_precision first");
  EXPECT_EQ(testing::error_of([] { AutocastScope scope(Precision::kFp16, torch::kCPU); }),
            "train.precision fp16 needs a CUDA device (on CPU use bf16)");
}

TEST(EvaluationPrecision, IsTheTrainingPrecisionWhereTheDeviceRunsIt) {
  EXPECT_EQ(evaluation_precision(Precision::kFp32, torch::kCPU), Precision::kFp32);
  EXPECT_EQ(evaluation_precision(Precision::kBf16, torch::kCPU), Precision::kBf16);
  EXPECT_EQ(evaluation_precision(Precision::kFp16, torch::kCPU), Precision::kFp32);
  EXPECT_EQ(evaluation_precision(Precision::kBf16, c10::Device("cuda:0")), Precision::kBf16);
  EXPECT_EQ(evaluation_precision(Precision::kFp16, c10::Device("cuda:1")), Precision::kFp16);
  EXPECT_EQ(evaluation_precision(Precision::kAuto, torch::kCPU),
            cpu_computes_bf16(cpu_isa()) ? Precision::kBf16 : Precision::kFp32);
}

TEST(WeightSubstitution, AppliesOnlyInsideItsScope) {
  const auto parameter = torch::ones({2, 2});
  const auto substitute = torch::zeros({2, 2});
  const WeightMap map{{parameter.unsafeGetTensorImpl(), substitute}};
  const auto other = torch::ones({3});
  EXPECT_TRUE(compute_weight(parameter).is_same(parameter));
  {
    WeightSubstitution scope(map);
    EXPECT_TRUE(compute_weight(parameter).is_same(substitute));
    EXPECT_TRUE(compute_weight(other).is_same(other));
    EXPECT_FALSE(compute_weight(torch::Tensor()).defined());
    EXPECT_NE(testing::error_of([&] { WeightSubstitution nested(map); }).find("do not nest"),
              std::string::npos);
  }
  EXPECT_TRUE(compute_weight(parameter).is_same(parameter));
}

}  // namespace
}  // namespace vit
