// Shape key: B batch, C channels, S image side, g grid side, F prefix tokens,
// N = F + g*g tokens, D width, H heads, Dh head width, I = H*Dh, M MLP width, K classes.
#include "vit/model/vision_transformer.hpp"

#include "layer_init.hpp"

#include <cmath>

#include <torch/torch.h>

#include "kernel_calls.hpp"
#include "vit/error.hpp"
#include "vit/kernels/linear.hpp"
#include "vit/model/block_checkpoint.hpp"
#include "vit/model/weight_substitution.hpp"

namespace vit {
namespace {

// timm's trunc_normal_(t, std=std) keeps its default bounds a=-2, b=2, which
// are absolute values, not multiples of std: for std 0.02 they lie 100 std
// out, so the result is N(0, std) and the clamp never bites. timm samples by
// inverting the CDF, where uniform_(-1, 1) can draw exactly -1 and give -inf
// (clamped to -2); sampling the normal directly avoids that corner.
// LibTorch's C++ API has no trunc_normal_.
void trunc_normal_(torch::Tensor& t, double std, double low = -2.0, double high = 2.0) {
  torch::NoGradGuard no_grad;
  t.normal_(/*mean=*/0.0, std).clamp_(low, high);
}

}  // namespace

PatchEmbedImpl::PatchEmbedImpl(const ModelConfig& cfg) {
  proj = register_module(
      "proj", torch::nn::Conv2d(torch::nn::Conv2dOptions(cfg.channels, cfg.dim, cfg.patch_size)
                                    .stride(cfg.patch_size)
                                    .bias(cfg.patch_bias)));
}

torch::Tensor PatchEmbedImpl::forward(const torch::Tensor& x) {
  const auto& weight = compute_weight(proj->weight);  // (D, C, P, P)
  const auto& bias = compute_weight(proj->bias);
  // The convolution (stride = kernel, no padding) as one matrix product over
  // the patches cut out and flattened like the filters, on every device. Why:
  // on the CPU it is faster than oneDNN's convolution (forward and the
  // weights' gradient), and on GPUs cuDNN runs 16 x 16 stride-16 patches
  // through implicit_convolve_sgemm, its slowest path.
  // (measured: docs/benchmarks.md, "Why the own kernels")
  const int64_t B = x.size(0), C = x.size(1), P = weight.size(2);
  const int64_t rows = x.size(2) / P, cols = x.size(3) / P;
  const auto patches = x.narrow(2, 0, rows * P)
                           .narrow(3, 0, cols * P)
                           .reshape({B, C, rows, P, cols, P})
                           .permute({0, 2, 4, 1, 3, 5})                // (B, g, g, C, P, P)
                           .reshape({B, rows * cols, C * P * P});      // (B, g*g, C*P*P)
  return vit::linear(patches, weight.flatten(/*start_dim=*/1), bias);  // (B, g*g, D)
}

VisionTransformerImpl::VisionTransformerImpl(const ModelConfig& cfg, WeightInit init) : cfg_(cfg) {
  const LayerInitScope layers(init);
  const int64_t D = cfg.dim;
  patch_embed = register_module("patch_embed", PatchEmbed(cfg));
  if (cfg.class_token) cls_token = register_parameter("cls_token", torch::zeros({1, 1, D}));
  if (cfg.distilled) dist_token = register_parameter("dist_token", torch::zeros({1, 1, D}));
  if (cfg.registers > 0)
    reg_token = register_parameter("reg_token", torch::zeros({1, cfg.registers, D}));
  pos_embed = register_parameter("pos_embed", torch::zeros({1, cfg.position_rows(), D}));
  pos_drop = register_module("pos_drop", torch::nn::Dropout(cfg.emb_dropout));
  if (cfg.pre_norm) norm_pre = register_module("norm_pre", make_norm(cfg));
  blocks = register_module("blocks", torch::nn::ModuleList());
  // Stochastic depth rises linearly over the blocks, 0 to model.drop_path
  // (timm's torch.linspace(0, drop_path_rate, depth)).
  for (int64_t i = 0; i < cfg.depth; ++i)
    blocks->push_back(
        Block(cfg, cfg.depth > 1 ? cfg.drop_path * double(i) / double(cfg.depth - 1) : 0.0));
  if (cfg.fc_norm)
    fc_norm = register_module("fc_norm", make_norm(cfg));
  else
    norm = register_module("norm", make_norm(cfg));
  if (cfg.pool == Pool::kMap) attn_pool = register_module("attn_pool", AttentionPool(cfg));
  if (cfg.num_classes > 0) {  // 0: a backbone, whose output is the pooled features
    head = register_module("head", make_linear(D, cfg.num_classes));
    if (cfg.distilled) head_dist = register_module("head_dist", make_linear(D, cfg.num_classes));
  }
  if (init == WeightInit::kRandom) init_weights();
}

void VisionTransformerImpl::init_weights() {
  // timm's scheme: truncated normal(0.02) for linear weights and the
  // embeddings, zero biases, LayerNorm weight 1, LayerScale's gammas at
  // init_values (set where they are made). The patch convolution keeps
  // PyTorch's default (timm does the same for its patch embedding).
  torch::NoGradGuard no_grad;
  for (auto* t : {&cls_token, &dist_token, &pos_embed})
    if (t->defined()) trunc_normal_(*t, 0.02);
  if (reg_token.defined()) reg_token.normal_(0.0, 1e-6);  // timm's init of its registers
  if (!attn_pool.is_empty())                              // timm: std = D^-1/2
    trunc_normal_(attn_pool->latent, 1.0 / std::sqrt(static_cast<double>(cfg_.dim)));
  for (auto& module : modules(/*include_self=*/false)) {
    if (auto* linear = module->as<torch::nn::Linear>()) {
      trunc_normal_(linear->weight, 0.02);
      if (linear->bias.defined()) linear->bias.zero_();
    } else if (auto* layer_norm = module->as<torch::nn::LayerNorm>()) {
      layer_norm->weight.fill_(1.0);
      layer_norm->bias.zero_();
    }
  }
}

torch::Tensor VisionTransformerImpl::embed(const torch::Tensor& images) {
  auto patches = patch_embed(images);  // (B, g*g, D)
  std::vector<torch::Tensor> tokens;   // the prefix, then the patches
  for (const auto* prefix : {&cls_token, &dist_token, &reg_token})
    if (prefix->defined())
      tokens.push_back(
          compute_weight(*prefix).to(patches.scalar_type()).expand({patches.size(0), -1, -1}));
  const auto& positions = compute_weight(pos_embed);
  torch::Tensor x;
  if (cfg_.prefix_unembedded()) {  // timm's no_embed_class: the patches' positions alone
    tokens.push_back(patches + positions);
    x = torch::cat(tokens, /*dim=*/1);  // (B, N, D)
  } else {
    tokens.push_back(patches);
    x = torch::cat(tokens, /*dim=*/1) + positions;  // (B, N, D)
  }
  x = pos_drop(x);
  return norm_pre.is_empty() ? x : normalized(norm_pre, x);
}

torch::Tensor VisionTransformerImpl::pool(const torch::Tensor& tokens) {
  switch (cfg_.pool) {
    case Pool::kMean:
      return patch_tokens(tokens).mean(1);  // (B, D)
    case Pool::kMap:
      return attn_pool(patch_tokens(tokens));  // (B, D)
    case Pool::kCls:
      break;
  }
  return tokens.select(/*dim=*/1, /*index=*/0);  // (B, D)
}

torch::Tensor VisionTransformerImpl::patch_tokens(const torch::Tensor& tokens) const {
  return tokens.slice(/*dim=*/1, /*start=*/cfg_.prefix_tokens());  // (B, g*g, D)
}

torch::Tensor VisionTransformerImpl::final_norm(const torch::Tensor& tokens) {
  return norm.is_empty() ? tokens : normalized(norm, tokens);  // (B, N, D)
}

torch::Tensor VisionTransformerImpl::forward_head(const torch::Tensor& features) {
  const bool has_head = !head.is_empty();
  if (cfg_.distilled) {  // DeiT at inference: the mean of the class and distillation heads
    const auto cls = features.select(1, 0), dist = features.select(1, 1);  // (B, D) each
    return has_head ? (linear(head, cls) + linear(head_dist, dist)) / 2 : (cls + dist) / 2;
  }
  return classify(pool(features));
}

torch::Tensor VisionTransformerImpl::classify(torch::Tensor pooled) {
  if (!fc_norm.is_empty()) pooled = normalized(fc_norm, pooled);  // (B, D)
  return head.is_empty() ? pooled : linear(head, pooled);         // (B, K), or (B, D)
}

torch::Tensor VisionTransformerImpl::stream_logits(const torch::Tensor& tokens) {
  return forward_head(final_norm(tokens));  // (B, K)
}

torch::Tensor VisionTransformerImpl::forward(const torch::Tensor& images) {
  return forward_head(final_norm(run_blocks(embed(images), {}, head_rows())));
}

torch::Tensor VisionTransformerImpl::forward_features(const torch::Tensor& images,
                                                      const BlockPass& pass) {
  return final_norm(forward_blocks(embed(images), pass));
}

BlockImpl& VisionTransformerImpl::block(int64_t index) {
  return *blocks[static_cast<size_t>(index)]->as<Block>();
}

// With pool "cls" the last block computes the class token's row alone, for about
// 3/4 less of that block's work.
QueryRows VisionTransformerImpl::head_rows() const {
  return cfg_.pool == Pool::kCls && !cfg_.distilled ? QueryRows::kClassToken : QueryRows::kAll;
}

torch::Tensor VisionTransformerImpl::forward_blocks(torch::Tensor tokens, const BlockPass& pass) {
  return run_blocks(std::move(tokens), pass, QueryRows::kAll);
}

// x = x + attn(norm1(x)); x = x + mlp(norm2(x)), block after block. Without a
// visitor, each block's last add is computed with the next block's norm1 in
// one pass (Residual), and the last block computes `last_rows`; with one,
// every block runs the explicit attention and the visitor reads and edits it.
// Checkpointed blocks (set_grad_checkpointing) take and give whole tensors.
torch::Tensor VisionTransformerImpl::run_blocks(torch::Tensor tokens, const BlockPass& pass,
                                                QueryRows last_rows) {
  const auto depth = static_cast<int64_t>(blocks->size());
  if (pass.first < 0 || pass.first > depth)
    throw Error("forward_blocks: first block " + std::to_string(pass.first) + ", expected 0.." +
                std::to_string(depth));
  Residual x(std::move(tokens));
  for (int64_t i = pass.first; i < depth; ++i) {
    AttentionCall call;
    BlockSkip skip;
    const QueryRows rows = i + 1 == depth && !pass.visitor ? last_rows : QueryRows::kAll;
    if (pass.visitor) {
      call.probabilities = true;
      pass.visitor->before(i, call, skip);
    }
    if (!pass.visitor && checkpointing_.covers(i) && is_training() &&
        torch::GradMode::is_enabled()) {
      x = Residual(run_checkpointed(block(i), x.tensor(), rows));
      continue;
    }
    BlockResult r = block(i).run(std::move(x), call, skip, rows);
    if (pass.visitor) pass.visitor->after(i, r);
    x = std::move(r.out);  // (B, N, D), or (B, 1, D): the class token
  }
  return x.tensor();
}

namespace {

// Keeps every block's attention probabilities.
class AttentionRecorder : public BlockVisitor {
 public:
  explicit AttentionRecorder(std::vector<torch::Tensor>& out) : out_(out) {}
  void after(int64_t, BlockResult& result) override { out_.push_back(result.probabilities); }

 private:
  std::vector<torch::Tensor>& out_;
};

}  // namespace

LogitsAndAttention VisionTransformerImpl::forward_with_attention(const torch::Tensor& images) {
  LogitsAndAttention out;
  AttentionRecorder recorder(out.attention);
  BlockPass pass;
  pass.visitor = &recorder;
  const auto features = forward_features(images, pass);
  if (attn_pool.is_empty()) {
    out.logits = forward_head(features);
    return out;
  }
  // The attention pool once, keeping its probabilities (forward_head's path for pool map).
  AttentionPoolResult pooled = attn_pool->pool(patch_tokens(features));
  out.pool_attention = std::move(pooled.probabilities);
  out.logits = classify(std::move(pooled.pooled));
  return out;
}

int64_t count_parameters(const ModelConfig& cfg) {
  const int64_t D = cfg.dim, I = cfg.inner_dim(), M = cfg.mlp_dim, K = cfg.num_classes;
  const int64_t patch =
      cfg.channels * cfg.patch_size * cfg.patch_size * D + (cfg.patch_bias ? D : 0);
  const int64_t embeddings = (cfg.prefix_tokens() + cfg.position_rows()) * D;
  const int64_t norm = 2 * D;
  const int64_t attention = D * 3 * I + (cfg.qkv_bias ? 3 * I : 0) + I * D + D;
  const int64_t mlp = D * M + M + M * D + D;
  const int64_t layer_scale = cfg.layer_scale() ? 2 * D : 0;
  const int64_t block = 2 * norm + attention + mlp + layer_scale;
  // latent, q, kv, proj (each with a bias), norm, MLP
  const int64_t attn_pool =
      cfg.pool == Pool::kMap ? D + (D * D + D) + (D * 2 * D + 2 * D) + (D * D + D) + norm + mlp : 0;
  const int64_t heads = K > 0 ? (cfg.distilled ? 2 : 1) * (D * K + K) : 0;
  return patch + embeddings + (cfg.pre_norm ? norm : 0) + cfg.depth * block + norm + attn_pool +
         heads;
}

int64_t forward_flops(const ModelConfig& cfg) {
  // One FLOP per multiply-add of the matrix products, the convention of the
  // ViT paper's and timm's tables (ViT-B/16: 17.6 GFLOPs). Norms, softmax and
  // GELU are a few percent and left out, as is customary.
  const int64_t D = cfg.dim, I = cfg.inner_dim(), M = cfg.mlp_dim;
  const int64_t P = cfg.num_patches(), N = cfg.tokens();
  const int64_t patch = P * cfg.channels * cfg.patch_size * cfg.patch_size * D;
  const int64_t attention = N * D * 3 * I + 2 * N * N * I + N * I * D;  // qkv, QK^T and AV, proj
  const int64_t mlp = 2 * N * D * M;
  // One query over the patches: q, kv, its products, proj, the MLP on one row.
  const int64_t attn_pool =
      cfg.pool == Pool::kMap ? D * D + P * D * 2 * D + 2 * P * D + D * D + 2 * D * M : 0;
  const int64_t head = (cfg.distilled ? 2 : 1) * D * cfg.num_classes;
  return patch + cfg.depth * (attention + mlp) + attn_pool + head;
}

}  // namespace vit
