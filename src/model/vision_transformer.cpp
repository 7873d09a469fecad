// Shape key: B batch, C channels, S image side, g grid side, R registers,
// N = 1 + R + g*g tokens, D width, H heads, Dh head width, I = H*Dh, M MLP width, K classes.
#include "vit/model/vision_transformer.hpp"

#include <torch/torch.h>

#include "kernel_calls.hpp"
#include "vit/error.hpp"
#include "vit/kernels/linear.hpp"
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
      "proj",
      torch::nn::Conv2d(
          torch::nn::Conv2dOptions(cfg.channels, cfg.dim, cfg.patch_size).stride(cfg.patch_size)));
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

VisionTransformerImpl::VisionTransformerImpl(const ModelConfig& cfg) : cfg_(cfg) {
  patch_embed = register_module("patch_embed", PatchEmbed(cfg));
  cls_token = register_parameter("cls_token", torch::zeros({1, 1, cfg.dim}));
  if (cfg.registers > 0)
    reg_token = register_parameter("reg_token", torch::zeros({1, cfg.registers, cfg.dim}));
  pos_embed = register_parameter("pos_embed", torch::zeros({1, cfg.position_rows(), cfg.dim}));
  pos_drop = register_module("pos_drop", torch::nn::Dropout(cfg.emb_dropout));
  blocks = register_module("blocks", torch::nn::ModuleList());
  // Stochastic depth rises linearly over the blocks, 0 to model.drop_path
  // (timm's torch.linspace(0, drop_path_rate, depth)).
  for (int64_t i = 0; i < cfg.depth; ++i)
    blocks->push_back(
        Block(cfg, cfg.depth > 1 ? cfg.drop_path * double(i) / double(cfg.depth - 1) : 0.0));
  norm = register_module("norm", make_norm(cfg));
  head = register_module("head", torch::nn::Linear(cfg.dim, cfg.num_classes));
  init_weights();
}

void VisionTransformerImpl::init_weights() {
  // timm's scheme: truncated normal(0.02) for linear weights and the two
  // embeddings, zero biases, LayerNorm weight 1. The patch convolution keeps
  // PyTorch's default (timm does the same for its patch embedding).
  torch::NoGradGuard no_grad;
  trunc_normal_(cls_token, 0.02);
  trunc_normal_(pos_embed, 0.02);
  if (reg_token.defined()) reg_token.normal_(0.0, 1e-6);  // timm's init of its registers
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
  const auto prefix_of = [&](const torch::Tensor& t) {
    return compute_weight(t).to(patches.scalar_type()).expand({patches.size(0), -1, -1});
  };
  const auto cls = prefix_of(cls_token);  // (B, 1, D)
  if (!reg_token.defined())
    return pos_drop(torch::cat({cls, patches}, /*dim=*/1) +
                    compute_weight(pos_embed));  // (B, N, D)
  // timm's register models (no_embed_class): the positions are the patches'
  // alone, and the class token and the registers go in front unembedded.
  return pos_drop(
      torch::cat({cls, prefix_of(reg_token), patches + compute_weight(pos_embed)}, /*dim=*/1));
}

torch::Tensor VisionTransformerImpl::pool(const torch::Tensor& tokens) {
  return cfg_.pool == Pool::kMean ? patch_tokens(tokens).mean(1)            // (B, D)
                                  : tokens.select(/*dim=*/1, /*index=*/0);  // (B, D)
}

torch::Tensor VisionTransformerImpl::patch_tokens(const torch::Tensor& tokens) const {
  return tokens.slice(/*dim=*/1, /*start=*/cfg_.prefix_tokens());  // (B, g*g, D)
}

torch::Tensor VisionTransformerImpl::forward_head(const torch::Tensor& tokens) {
  return linear(head, pool(normalized(norm, tokens)));  // (B, N, D) -> (B, D) -> (B, K)
}

torch::Tensor VisionTransformerImpl::forward(const torch::Tensor& images) {
  BlockPass pass;
  pass.head_rows_only = true;
  return forward_head(forward_features(images, pass));
}

torch::Tensor VisionTransformerImpl::forward_features(const torch::Tensor& images,
                                                      const BlockPass& pass) {
  return forward_blocks(embed(images), pass);
}

BlockImpl& VisionTransformerImpl::block(int64_t index) {
  return *blocks[static_cast<size_t>(index)]->as<Block>();
}

torch::Tensor VisionTransformerImpl::forward_blocks(torch::Tensor tokens, const BlockPass& pass) {
  const auto depth = static_cast<int64_t>(blocks->size());
  if (pass.first < 0 || pass.first > depth)
    throw Error("forward_blocks: first block " + std::to_string(pass.first) + ", expected 0.." +
                std::to_string(depth));
  return pass.visitor ? run_visited_blocks(std::move(tokens), pass)
                      : run_fused_blocks(std::move(tokens), pass);
}

// x = x + attn(norm1(x)); x = x + mlp(norm2(x)), block after block. Each
// block's last add is computed with the next block's norm1, in one pass
// (Residual).
torch::Tensor VisionTransformerImpl::run_fused_blocks(torch::Tensor tokens, const BlockPass& pass) {
  const auto depth = static_cast<int64_t>(blocks->size());
  Residual x(std::move(tokens));
  for (int64_t i = pass.first; i < depth; ++i) {
    AttentionCall call;
    if (i + 1 == depth && pass.head_rows_only && cfg_.pool == Pool::kCls)
      call.queries = AttentionCall::Queries::kClassToken;
    x = block(i).run(x, call).out;  // (B, N, D), or (B, 1, D): the class token
  }
  return x.tensor();
}

// The same blocks, each on the explicit path, with the visitor around it.
torch::Tensor VisionTransformerImpl::run_visited_blocks(torch::Tensor tokens,
                                                        const BlockPass& pass) {
  const auto depth = static_cast<int64_t>(blocks->size());
  Residual x(std::move(tokens));
  for (int64_t i = pass.first; i < depth; ++i) {
    AttentionCall call;
    call.probabilities = true;
    BlockSkip skip;
    pass.visitor->before(i, call, skip);
    BlockResult r = block(i).run(x, call, skip);
    pass.visitor->after(i, r);
    x = std::move(r.out);  // (B, N, D)
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
  out.logits = forward_head(forward_features(images, pass));
  return out;
}

int64_t count_parameters(const ModelConfig& cfg) {
  const int64_t D = cfg.dim, I = cfg.inner_dim(), M = cfg.mlp_dim;
  const int64_t patch = cfg.channels * cfg.patch_size * cfg.patch_size * D + D;
  const int64_t embeddings = (1 + cfg.registers + cfg.position_rows()) * D;
  const int64_t norm = 2 * D;
  const int64_t attention = D * 3 * I + (cfg.qkv_bias ? 3 * I : 0) + I * D + D;
  const int64_t mlp = D * M + M + M * D + D;
  const int64_t block = 2 * norm + attention + mlp;
  const int64_t head = D * cfg.num_classes + cfg.num_classes;
  return patch + embeddings + cfg.depth * block + norm + head;
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
  const int64_t head = D * cfg.num_classes;
  return patch + cfg.depth * (attention + mlp) + head;
}

}  // namespace vit
