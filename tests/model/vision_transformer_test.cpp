#include "vit/model/vision_transformer.hpp"

#include <cmath>
#include <filesystem>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <string>

#include "kernels/kernel_paths.hpp"
#include "vit/error.hpp"
#include "vit/infer/precision.hpp"

namespace vit {
namespace {

ModelConfig small_config() {
  ModelConfig m;
  m.image_size = 16;
  m.patch_size = 4;
  m.channels = 3;
  m.num_classes = 5;
  m.dim = 32;
  m.depth = 2;
  m.heads = 4;
  m.mlp_dim = 64;
  return m;
}

ModelConfig vit_base() {  // timm's vit_base_patch16_224
  ModelConfig m;
  m.image_size = 224;
  m.patch_size = 16;
  m.dim = 768;
  m.depth = 12;
  m.heads = 12;
  m.mlp_dim = 3072;
  m.num_classes = 1000;
  m.qkv_bias = true;
  return m;
}

TEST(VisionTransformer, LogitsHaveTheRightShapeAndNoNaN) {
  torch::manual_seed(0);
  VisionTransformer model(small_config());
  const auto logits = model->forward(torch::randn({3, 3, 16, 16}));
  EXPECT_EQ(logits.sizes(), (std::vector<int64_t>{3, 5}));
  EXPECT_FALSE(logits.isnan().any().item<bool>());
}

TEST(VisionTransformer, ParameterNamesAreTimms) {
  VisionTransformer model(small_config());
  std::vector<std::string> names;
  for (const auto& p : model->named_parameters())
    names.push_back(p.key());
  const std::vector<std::string> expected_start = {"cls_token",
                                                   "pos_embed",
                                                   "patch_embed.proj.weight",
                                                   "patch_embed.proj.bias",
                                                   "blocks.0.norm1.weight",
                                                   "blocks.0.norm1.bias",
                                                   "blocks.0.attn.qkv.weight",
                                                   "blocks.0.attn.qkv.bias",
                                                   "blocks.0.attn.proj.weight",
                                                   "blocks.0.attn.proj.bias",
                                                   "blocks.0.norm2.weight",
                                                   "blocks.0.norm2.bias",
                                                   "blocks.0.mlp.fc1.weight",
                                                   "blocks.0.mlp.fc1.bias",
                                                   "blocks.0.mlp.fc2.weight",
                                                   "blocks.0.mlp.fc2.bias"};
  ASSERT_GE(names.size(), expected_start.size());
  EXPECT_EQ(std::vector<std::string>(names.begin(), names.begin() + expected_start.size()),
            expected_start);
  EXPECT_EQ(names[names.size() - 4], "norm.weight");
  EXPECT_EQ(names.back(), "head.bias");
}

// A model whose file replaces every value is only allocated, with the same
// tensors, layers and training behaviour as a random one; the values it keeps
// until then are LibTorch's, not timm's (its LayerNorms' ones, for one).
TEST(VisionTransformer, AModelForAFileHasEveryTensorOfARandomOne) {
  ModelConfig m = small_config();
  m.pool = Pool::kMap;  // the attention pool's layers too
  m.class_token = false;
  m.distilled = false;
  VisionTransformer random(m);
  VisionTransformer from_file(m, WeightInit::kFromFile);
  const auto a = random->named_parameters(), b = from_file->named_parameters();
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].key(), b[i].key());
    EXPECT_EQ(a[i].value().sizes(), b[i].value().sizes()) << a[i].key();
    EXPECT_TRUE(b[i].value().requires_grad()) << a[i].key();
  }
  // The linear layers report their real sizes.
  const auto* qkv = from_file->blocks[0]->as<BlockImpl>()->attn->qkv.get();
  EXPECT_EQ(qkv->options.in_features(), 32);
  EXPECT_EQ(qkv->options.out_features(), 96);
  // Given the random one's values, it computes the same logits, and trains.
  {
    torch::NoGradGuard no_grad;
    for (size_t i = 0; i < a.size(); ++i)
      b[i].value().copy_(a[i].value());
  }
  random->eval();
  from_file->eval();
  const auto x = torch::randn({2, 3, 16, 16});
  EXPECT_TRUE(torch::equal(random->forward(x), from_file->forward(x)));
  from_file->forward(x).sum().backward();
  EXPECT_TRUE(from_file->blocks[0]->as<BlockImpl>()->mlp->fc1->weight.grad().defined());
}

int64_t counted(const ModelConfig& m) {
  VisionTransformer model(m);
  int64_t n = 0;
  for (const auto& p : model->parameters())
    n += p.numel();
  return n;
}

TEST(VisionTransformer, ExactParameterCountsOfThePresets) {
  ModelConfig base = vit_base();
  base.qkv_bias = false;
  EXPECT_EQ(count_parameters(base), 86540008);
  EXPECT_EQ(count_parameters(vit_base()), 86567656);  // with qkv bias, as timm

  ModelConfig tiny;  // the second seed's vit_tiny
  tiny.image_size = 32;
  tiny.patch_size = 4;
  tiny.dim = 512;
  tiny.depth = 4;
  tiny.heads = 8;
  tiny.mlp_dim = 1024;
  tiny.num_classes = 10;
  tiny.qkv_bias = false;
  EXPECT_EQ(count_parameters(tiny), 8470026);
  EXPECT_EQ(counted(tiny), 8470026);

  ModelConfig odd = small_config();  // dim_head different from dim / heads
  odd.dim_head = 16;
  odd.qkv_bias = false;
  EXPECT_EQ(counted(odd), count_parameters(odd));
}

TEST(VisionTransformer, FlopsOfViTBase) {
  const ModelConfig base = vit_base();
  // Multiply-adds, the convention of the ViT and timm tables (ViT-B/16: "17.6 GFLOPs"):
  // patch 196*768*768 = 115,605,504; per block qkv 197*768*2304 = 348,585,984,
  // QK^T and AV 2*197*197*768 = 59,610,624, proj 197*768*768 = 116,195,328,
  // MLP 2*197*768*3072 = 929,562,624; head 768*1000 = 768,000.
  EXPECT_EQ(forward_flops(base),
            115605504 + int64_t{12} * (348585984 + 59610624 + 116195328 + 929562624) + 768000);
  EXPECT_EQ(forward_flops(base), 17563828224);
}

// validate()'s upper bounds keep the int64 counts of `vit info` from
// overflowing: at the bounds they match the same sums in long double.
TEST(VisionTransformer, CountsAtTheConfigBoundsDoNotOverflow) {
  ModelConfig m;
  m.image_size = kMaxImageSize;
  m.patch_size = kMaxImageSize / 256;  // the most patches: 256 x 256
  m.num_classes = kMaxClasses;
  m.dim = kMaxWidth;
  m.depth = kMaxDepth;
  m.heads = 1;
  m.mlp_dim = kMaxWidth;
  const long double D = m.dim, I = m.inner_dim(), M = m.mlp_dim, K = m.num_classes;
  const long double L = m.depth, P = m.num_patches(), N = P + 1,
                    pp = 3.0L * m.patch_size * m.patch_size;
  const long double params = pp * D + D + D + N * D + 2 * D + K * D + K +
                             L * (4 * D + 3 * D * I + 3 * I + I * D + D + 2 * D * M + M + D);
  const long double flops =
      P * pp * D + L * (3 * N * D * I + 2 * N * N * I + N * I * D + 2 * N * D * M) + D * K;
  EXPECT_NEAR(static_cast<long double>(count_parameters(m)) / params, 1.0L, 1e-12L);
  EXPECT_NEAR(static_cast<long double>(forward_flops(m)) / flops, 1.0L, 1e-12L);
}

TEST(VisionTransformer, EveryParameterGetsAGradient) {
  torch::manual_seed(0);
  for (const Pool pool : {Pool::kCls, Pool::kMean}) {
    auto cfg = small_config();
    cfg.pool = pool;
    VisionTransformer model(cfg);
    auto loss = torch::cross_entropy_loss(model->forward(torch::randn({2, 3, 16, 16})),
                                          torch::tensor({1, 3}));
    loss.backward();
    for (const auto& p : model->named_parameters()) {
      ASSERT_TRUE(p.value().grad().defined()) << pool << " " << p.key();
      EXPECT_GT(p.value().grad().abs().sum().item<double>(), 0.0) << pool << " " << p.key();
    }
  }
}

TEST(VisionTransformer, AttentionRowsSumToOne) {
  torch::manual_seed(1);
  VisionTransformer model(small_config());
  model->eval();
  const auto out = model->forward_with_attention(torch::randn({2, 3, 16, 16}));
  ASSERT_EQ(out.attention.size(), 2u);
  for (const auto& a : out.attention) {
    EXPECT_EQ(a.sizes(), (std::vector<int64_t>{2, 4, 17, 17}));
    EXPECT_TRUE(torch::allclose(a.sum(-1), torch::ones({2, 4, 17}), /*rtol=*/0, /*atol=*/1e-6));
  }
}

TEST(VisionTransformer, FusedAndExplicitAttentionAgree) {
  torch::manual_seed(2);
  VisionTransformer model(small_config());
  model->eval();
  const auto x = torch::randn({4, 3, 16, 16});
  torch::NoGradGuard no_grad;
  const auto fast = model->forward(x);
  const auto explicit_path = model->forward_with_attention(x).logits;
  EXPECT_LT((fast - explicit_path).abs().max().item<double>(), 1e-5);
}

// On the CPU, training attention is the explicit path on both LibTorch lines:
// SDPA's CPU kernel (LibTorch 2.x) made a training step twice as slow. So the
// plain forward is the probabilities path to the bit; SDPA's would differ in
// the last places.
TEST(VisionTransformer, OnTheCpuAttentionIsTheExplicitPathToTheBit) {
  torch::manual_seed(3);
  Attention attn(small_config());
  attn->eval();
  torch::NoGradGuard no_grad;
  const auto x = torch::randn({2, 17, small_config().dim});
  AttentionCall with_probabilities;
  with_probabilities.probabilities = true;
  EXPECT_TRUE(
      attn->forward(x).equal(attn->project(attn->attend(x, with_probabilities).merged).applied()));
}

// On LibTorch < 2.0 forward() calls forward_with_attention(), so the test above
// compares a path with itself. This one checks both against attention written
// out by hand, one head at a time, from the qkv and proj weights.
TEST(VisionTransformer, AttentionMatchesAHandComputation) {
  torch::manual_seed(6);
  auto cfg = small_config();
  cfg.dim_head = 12;  // I = 48 differs from D = 32, so a mix-up of the two widths shows
  const int64_t B = 2, N = 17, D = cfg.dim, H = cfg.heads, Dh = cfg.dim_head, I = H * Dh;
  Attention attn(cfg);
  attn->eval();
  torch::NoGradGuard no_grad;
  attn->qkv->bias.normal_();  // O(1) biases, so one added in the wrong place shows
  attn->proj->bias.normal_();
  const auto x = torch::randn({B, N, D});

  const auto qkv = torch::matmul(x, attn->qkv->weight.t()) + attn->qkv->bias;  // (B, N, 3I)
  std::vector<torch::Tensor> outs, probs;
  for (int64_t h = 0; h < H; ++h) {
    // timm's layout: the 3I outputs are [q | k | v], each split into H heads of Dh.
    const auto q = qkv.slice(/*dim=*/2, h * Dh, (h + 1) * Dh);                  // (B, N, Dh)
    const auto k = qkv.slice(/*dim=*/2, I + h * Dh, I + (h + 1) * Dh);          // (B, N, Dh)
    const auto v = qkv.slice(/*dim=*/2, 2 * I + h * Dh, 2 * I + (h + 1) * Dh);  // (B, N, Dh)
    // Scores (B, N, N), then the softmax over the keys, written out.
    const auto scores = torch::matmul(q, k.transpose(1, 2)) / std::sqrt(static_cast<double>(Dh));
    const auto e = (scores - std::get<0>(scores.max(/*dim=*/2, /*keepdim=*/true))).exp();
    const auto p = e / e.sum(/*dim=*/2, /*keepdim=*/true);
    probs.push_back(p);
    outs.push_back(torch::matmul(p, v));  // (B, N, Dh)
  }
  const auto merged = torch::cat(outs, /*dim=*/2);  // (B, N, I), heads side by side
  const auto expected = torch::matmul(merged, attn->proj->weight.t()) + attn->proj->bias;
  const auto expected_probs = torch::stack(probs, /*dim=*/1);  // (B, H, N, N)

  const auto fast = attn->forward(x);
  AttentionCall with_probabilities;
  with_probabilities.probabilities = true;
  const AttentionResult explicit_path = attn->attend(x, with_probabilities);
  const auto out = attn->project(explicit_path.merged).applied();
  const auto& attention = explicit_path.probabilities;
  const auto class_token =
      attn->project(attn->attend(x, {}, QueryRows::kClassToken).merged).applied();
  // Onto the residual stream: the projection's bias joins the add, and the
  // norm asked for comes from the same pass.
  Residual residual(torch::randn({B, N, D}));
  torch::nn::LayerNorm norm(torch::nn::LayerNormOptions({D}));
  norm->weight.normal_();
  norm->bias.normal_();
  Residual sum = residual + attn->project(explicit_path.merged);
  EXPECT_LT((sum.tensor() - (residual.tensor() + expected)).abs().max().item<double>(), 1e-5);
  EXPECT_LT((sum.normalized(norm) - norm(residual.tensor() + expected)).abs().max().item<double>(),
            1e-4);
  // Another norm is computed afresh, not taken from the one the add made.
  torch::nn::LayerNorm other(torch::nn::LayerNormOptions({D}));
  EXPECT_LT((sum.normalized(other) - other(sum.tensor())).abs().max().item<double>(), 1e-5);
  ASSERT_EQ(fast.sizes(), (std::vector<int64_t>{B, N, D}));
  ASSERT_EQ(class_token.sizes(), (std::vector<int64_t>{B, 1, D}));
  EXPECT_LT((class_token - expected.narrow(/*dim=*/1, 0, 1)).abs().max().item<double>(), 1e-5);
  ASSERT_EQ(attention.sizes(), (std::vector<int64_t>{B, H, N, N}));
  EXPECT_LT((fast - expected).abs().max().item<double>(), 1e-5);
  EXPECT_LT((out - expected).abs().max().item<double>(), 1e-5);
  EXPECT_LT((attention - expected_probs).abs().max().item<double>(), 1e-5);
}

// With pool "cls", forward() runs the last block for the class token alone;
// forward_with_attention() runs every block in full. Logits and every
// parameter's gradient must agree, with and without the qkv bias.
TEST(VisionTransformer, ClassTokenOnlyLastBlockKeepsLogitsAndGradients) {
  for (const bool qkv_bias : {true, false}) {
    torch::manual_seed(7);
    auto cfg = small_config();
    cfg.pool = Pool::kCls;
    cfg.qkv_bias = qkv_bias;
    cfg.depth = 3;
    VisionTransformer model(cfg);
    const auto x = torch::randn({3, 3, 16, 16});
    const auto labels = torch::tensor({0, 4, 2});
    const auto params = model->parameters();
    const auto gradients_of = [&](const torch::Tensor& logits) {
      return torch::autograd::grad({torch::cross_entropy_loss(logits, labels)}, params);
    };
    const auto short_logits = model->forward(x);
    const auto full_logits = model->forward_with_attention(x).logits;
    EXPECT_LT((short_logits - full_logits).abs().max().item<double>(), 1e-5) << qkv_bias;
    const auto short_grads = gradients_of(short_logits), full_grads = gradients_of(full_logits);
    ASSERT_EQ(short_grads.size(), full_grads.size());
    for (size_t i = 0; i < params.size(); ++i) {
      const double scale = full_grads[i].abs().max().item<double>();
      ASSERT_GT(scale, 0.0) << i;  // every parameter reaches the loss, the last block's too
      EXPECT_LT((short_grads[i] - full_grads[i]).abs().max().item<double>(), 1e-5 * scale)
          << model->named_parameters()[i].key() << " qkv_bias " << qkv_bias;
    }
  }
}

// forward() joins each block's last residual add with the next block's norm1
// (Residual::plus, kernels/residual_norm): the same arithmetic as running the
// blocks one by one, each normalizing its own input. So the same logits to
// the bit, and the same gradients within float rounding of the sums, in fp32
// and under bf16 autocast, for both poolings (cls: the last block computes the
// class token alone, whose residual is a strided row, and runs the two apart).
TEST(VisionTransformer, ForwardJoiningTheBlocksSeamsIsTheBlocksRunOneByOne) {
  const std::string bf16_refused = testing::cpu_bf16_products_refused();
  for (const Pool pool : {Pool::kCls, Pool::kMean}) {
    for (const Precision precision : {Precision::kFp32, Precision::kBf16}) {
      if (precision == Precision::kBf16 && !bf16_refused.empty()) continue;
      SCOPED_TRACE(std::string(enum_name(pool)) + ", " + enum_name(precision));
      torch::manual_seed(9);
      auto cfg = small_config();
      cfg.pool = pool;
      cfg.depth = 3;
      VisionTransformer model(cfg);
      {
        torch::NoGradGuard no_grad;
        for (auto& p : model->parameters())
          p.add_(0.1 * torch::randn_like(p));  // biases and norms away from 0 and 1
      }
      const auto images = torch::randn({3, 3, 16, 16});
      const auto labels = torch::tensor({0, 4, 2});
      const auto params = model->parameters();
      const auto run = [&](bool joined) {
        AutocastScope autocast(precision, torch::kCPU);
        torch::Tensor logits;
        if (joined) {
          logits = model->forward(images);
        } else {
          auto x = model->embed(images);
          for (size_t i = 0; i < model->blocks->size(); ++i) {
            const bool last = i + 1 == model->blocks->size();
            const auto rows = last && pool == Pool::kCls ? QueryRows::kClassToken : QueryRows::kAll;
            x = model->blocks[i]->as<Block>()->run(Residual(x), {}, {}, rows).out.tensor();
          }
          logits = model->stream_logits(x);
        }
        auto grads = torch::autograd::grad({torch::cross_entropy_loss(logits, labels)}, params);
        grads.insert(grads.begin(), logits.detach());
        return grads;
      };
      const auto joined = run(true), apart = run(false);
      EXPECT_TRUE(torch::equal(joined[0], apart[0]));
      for (size_t i = 1; i < joined.size(); ++i) {
        const double scale = apart[i].abs().max().item<double>();
        EXPECT_LE((joined[i] - apart[i]).abs().max().item<double>(), 1e-6 * (scale + 1e-3))
            << model->named_parameters()[i - 1].key();
      }
    }
  }
  if (!bf16_refused.empty()) GTEST_SKIP() << "the bf16 cases (fp32's ran): " << bf16_refused;
}

TEST(VisionTransformer, ForwardIsTheHeadOfTheFeatures) {
  torch::manual_seed(0);
  for (const Pool pool : {Pool::kCls, Pool::kMean}) {
    auto cfg = small_config();
    cfg.pool = pool;
    VisionTransformer model(cfg);
    model->eval();
    torch::NoGradGuard no_grad;
    const auto images = torch::randn({2, 3, 16, 16});
    const auto features = model->forward_features(images);
    EXPECT_EQ(features.sizes(), (std::vector<int64_t>{2, 17, 32}));  // every token by default
    const auto logits = model->forward(images);
    EXPECT_TRUE(torch::allclose(model->forward_head(features), logits, 1e-5, 1e-5));
    // forward_blocks from a middle block goes on from the stream there.
    BlockPass first_only;
    const auto after_first =
        model->blocks[0]->as<Block>()->forward(model->embed(images));  // (2, 17, 32)
    first_only.first = 1;
    EXPECT_TRUE(torch::allclose(model->final_norm(model->forward_blocks(after_first, first_only)),
                                features, 1e-5, 1e-5));
    // From the end: nothing runs.
    first_only.first = 2;
    EXPECT_TRUE(torch::equal(model->forward_blocks(features, first_only), features));
    first_only.first = 3;
    EXPECT_THROW(model->forward_blocks(features, first_only), Error);
  }
}

// A visitor that sees each block, and can edit one.
class CountingVisitor : public BlockVisitor {
 public:
  void before(int64_t layer, AttentionCall& call, BlockSkip& skip) override {
    befores.push_back(layer);
    EXPECT_TRUE(call.probabilities);  // the explicit path
    if (layer == skip_mlp_of) skip.mlp = true;
  }
  void after(int64_t layer, BlockResult& result) override {
    afters.push_back(layer);
    EXPECT_EQ(result.probabilities.size(-1), 17);
    if (layer == zero_out_of) result.out = Residual(torch::zeros_like(result.out.tensor()));
  }
  std::vector<int64_t> befores, afters;
  int64_t skip_mlp_of = -1, zero_out_of = -1;
};

TEST(VisionTransformer, AVisitorSeesEveryBlockAndItsEditsCarryOn) {
  torch::manual_seed(0);
  VisionTransformer model(small_config());
  model->eval();
  torch::NoGradGuard no_grad;
  const auto images = torch::randn({2, 3, 16, 16});
  const auto plain = model->forward_features(images);

  CountingVisitor watching;
  BlockPass pass;
  pass.visitor = &watching;
  EXPECT_TRUE(torch::allclose(model->forward_features(images, pass), plain, 1e-5, 1e-5));
  EXPECT_EQ(watching.befores, (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(watching.afters, (std::vector<int64_t>{0, 1}));

  // A replaced output is what the next block reads: block 1 on zeros.
  CountingVisitor zeroing;
  zeroing.zero_out_of = 0;
  pass.visitor = &zeroing;
  const auto from_zeros = model->blocks[1]->as<Block>()->forward(torch::zeros({2, 17, 32}));
  EXPECT_TRUE(
      torch::allclose(model->forward_blocks(model->embed(images), pass), from_zeros, 1e-5, 1e-5));

  // A skip in the last block: its output is the attention's residual sum alone.
  CountingVisitor skipping;
  skipping.skip_mlp_of = 1;
  pass.visitor = &skipping;
  auto& last = *model->blocks[1]->as<Block>();
  const auto entering = model->blocks[0]->as<Block>()->forward(model->embed(images));
  const auto expected = entering + last.attn->forward(last.norm1(entering));
  EXPECT_TRUE(
      torch::allclose(model->forward_blocks(model->embed(images), pass), expected, 1e-5, 1e-5));
  // forward_features ends with the final norm, as timm's does.
  EXPECT_TRUE(torch::allclose(model->forward_features(images, pass), model->final_norm(expected),
                              1e-5, 1e-5));
}

TEST(VisionTransformer, EvalOutputsSurviveSaveAndLoad) {
  auto cfg = small_config();
  cfg.dropout = 0.3;
  cfg.attn_dropout = 0.3;
  cfg.emb_dropout = 0.3;
  torch::manual_seed(3);
  VisionTransformer model(cfg);
  model->eval();
  const auto path = std::filesystem::temp_directory_path() / "vit_model_roundtrip.pt";
  torch::save(model, path.string());
  torch::manual_seed(4);
  VisionTransformer loaded(cfg);
  torch::load(loaded, path.string());
  loaded->eval();
  std::filesystem::remove(path);
  const auto x = torch::randn({2, 3, 16, 16});
  torch::NoGradGuard no_grad;
  EXPECT_TRUE(torch::equal(model->forward(x), loaded->forward(x)));
  EXPECT_TRUE(torch::equal(model->forward(x), model->forward(x)));  // dropout is off in eval
}

// Stochastic depth: rates rising from 0 to model.drop_path over the blocks;
// in training each image's branch is kept or dropped whole (kept ones
// scaled by 1 / (1 - rate)); evaluation and the rate-0 first block are untouched.
TEST(VisionTransformer, DropPathDropsWholeBranchesPerImageInTrainingOnly) {
  ModelConfig cfg = small_config();
  cfg.depth = 3;
  cfg.drop_path = 0.5;
  torch::manual_seed(0);
  VisionTransformer model(cfg);
  EXPECT_DOUBLE_EQ(model->blocks[0]->as<BlockImpl>()->drop_path_rate, 0.0);
  EXPECT_DOUBLE_EQ(model->blocks[1]->as<BlockImpl>()->drop_path_rate, 0.25);
  EXPECT_DOUBLE_EQ(model->blocks[2]->as<BlockImpl>()->drop_path_rate, 0.5);
  auto* last = model->blocks[2]->as<BlockImpl>();
  const auto x = torch::randn({400, 17, 32});
  last->eval();
  const auto kept = last->forward(x);
  last->train();
  const auto dropped = last->forward(x);
  // An image whose both branches were dropped comes out as it went in: a
  // quarter of them at rate 0.5 (the standard deviation is 0.02).
  const auto unchanged = (dropped - x).abs().amax({1, 2}).eq(0);
  EXPECT_NEAR(unchanged.to(torch::kFloat64).mean().item<double>(), 0.25, 0.08);
  // The first block (rate 0) trains as it evaluates.
  auto* first = model->blocks[0]->as<BlockImpl>();
  first->train();
  const auto a = first->forward(x);
  first->eval();
  EXPECT_TRUE(torch::allclose(a, first->forward(x), 1e-6, 1e-6));
  // Gradients reach every parameter through the kept branches.
  model->train();
  model->forward(torch::randn({8, 3, 16, 16})).sum().backward();
  for (const auto& p : model->named_parameters())
    EXPECT_TRUE(p.value().grad().defined()) << p.key();
  EXPECT_FALSE(torch::equal(kept, dropped));
}

TEST(VisionTransformer, InitialisationFollowsTimm) {
  torch::manual_seed(5);
  ModelConfig cfg = small_config();
  cfg.dim = 256;
  cfg.mlp_dim = 512;
  VisionTransformer model(cfg);
  // timm truncates at +-2 absolute, 100 std out, so the weights are N(0, 0.02):
  // not the 0.0176 of a normal truncated at +-2 std. The std of n normal draws
  // has a standard error of std / sqrt(2n); allow 5 of them.
  const auto w = model->blocks[0]->as<Block>()->mlp->fc1->weight;  // (512, 256)
  const double n = static_cast<double>(w.numel());
  EXPECT_NEAR(w.std().item<double>(), 0.02, 5 * 0.02 / std::sqrt(2 * n));
  // 4.55% of a normal lies beyond 2 std (none of one truncated there); the
  // fraction's standard error is sqrt(p (1 - p) / n).
  const double p = 0.0455;
  EXPECT_NEAR((w.abs() > 0.04).to(torch::kDouble).mean().item<double>(), p,
              5 * std::sqrt(p * (1 - p) / n));
  EXPECT_LE(w.abs().max().item<double>(), 2.0);
  EXPECT_EQ(model->blocks[0]->as<Block>()->mlp->fc1->bias.abs().sum().item<double>(), 0.0);
  EXPECT_TRUE(torch::equal(model->norm->weight, torch::ones({256})));
  const double n_pos = static_cast<double>(model->pos_embed.numel());  // 17 * 256
  EXPECT_NEAR(model->pos_embed.std().item<double>(), 0.02, 5 * 0.02 / std::sqrt(2 * n_pos));
}

}  // namespace
}  // namespace vit
