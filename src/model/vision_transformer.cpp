// Shape key: B batch, C channels, S image side, g grid side, N = g*g + 1 tokens,
// D width, H heads, Dh head width, I = H*Dh, M MLP width, K classes.
#include "vit/model/vision_transformer.hpp"

#include <cmath>

#include <torch/torch.h>
#include <torch/version.h>

#include "vit/error.hpp"
#include "vit/kernels/attention.hpp"
#include "vit/kernels/batched_matmul.hpp"
#include "vit/kernels/gelu.hpp"
#include "vit/kernels/head_split.hpp"
#include "vit/kernels/layer_norm.hpp"
#include "vit/kernels/linear.hpp"
#include "vit/kernels/residual.hpp"
#include "vit/kernels/residual_norm.hpp"
#include "vit/kernels/softmax.hpp"
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

torch::nn::LayerNorm make_norm(const ModelConfig& cfg) {
  return torch::nn::LayerNorm(torch::nn::LayerNormOptions({cfg.dim}).eps(cfg.layer_norm_eps));
}

// norm(x), through kernels/layer_norm: the module holds the parameters (timm's
// names), our kernel computes. Its parameters are compute_weight's: bf16
// copies where a training step runs in bf16 end to end (train/weight_mirror).
torch::Tensor normalized(const torch::nn::LayerNorm& norm, const torch::Tensor& x) {
  return vit::layer_norm(x, compute_weight(norm->weight), compute_weight(norm->bias),
                         norm->options.eps());
}

// norm(x) as the input of a linear layer: bf16 straight from the kernel under
// CPU bf16 autocast (see layer_norm_for_linear).
torch::Tensor normalized_for_linear(const torch::nn::LayerNorm& norm, const torch::Tensor& x) {
  return layer_norm_for_linear(x, compute_weight(norm->weight), compute_weight(norm->bias),
                               norm->options.eps());
}

// y = x W^T + b through kernels/linear (oneDNN's sgemm in fp32 where the build
// has it, else ATen's linear, which folds a contiguous (B, N, in) input into
// one addmm: GEMM with the bias). The C++ frontend's Linear
// (torch::nn::functional::linear, LibTorch 1.13) runs matmul and then a
// separate in-place bias add for any input that is not 2-D: one more pass
// over every activation, forward and backward (LibTorch's profiler: 107
// add_ against PyTorch's 25 addmm per step of the CPU benchmark job).
// The weights are compute_weight's: a training step's low-precision copies
// where train/weight_mirror provides them.
torch::Tensor linear(const torch::nn::Linear& layer, const torch::Tensor& x) {
  return vit::linear(x, compute_weight(layer->weight), compute_weight(layer->bias));
}

// residual + drop(layer(x)). Where kernels/residual's kernel runs, the layer's
// product leaves out the bias, which the kernel adds with the residual in one
// pass, in fp32 (so from the fp32 parameter, not a low-precision substitute).
// Dropout between the two (training with p > 0) keeps the separate steps.
torch::Tensor add_linear(const torch::Tensor& residual, const torch::nn::Linear& layer,
                         torch::nn::Dropout& drop, const torch::Tensor& x) {
  const bool dropping = drop->is_training() && drop->options.p() > 0;
  if (dropping || !biased_residual_uses_own_kernel(residual, layer->bias))
    return residual + drop(linear(layer, x));
  return add_biased_residual(residual, vit::linear(x, compute_weight(layer->weight)), layer->bias);
}

// add_linear(residual, layer, drop, x) and norm(it) as the next linear layer
// reads it: one pass over the sum where kernels/residual_norm runs.
std::pair<torch::Tensor, torch::Tensor> add_linear_then_norm(const torch::Tensor& residual,
                                                             const torch::nn::Linear& layer,
                                                             torch::nn::Dropout& drop,
                                                             const torch::Tensor& x,
                                                             const torch::nn::LayerNorm& norm) {
  const bool dropping = drop->is_training() && drop->options.p() > 0;
  const bool to_bf16 = normalizes_to_bf16_for_linear(residual);
  if (dropping || !biased_residual_then_norm_uses_own_kernel(residual, layer->bias, norm->weight,
                                                             norm->bias, to_bf16)) {
    auto sum = add_linear(residual, layer, drop, x);
    return {sum, normalized_for_linear(norm, sum)};
  }
  auto r = add_biased_residual_then_norm(residual, vit::linear(x, compute_weight(layer->weight)),
                                         layer->bias, norm->weight, norm->bias, norm->options.eps(),
                                         to_bf16);
  return {r.sum, r.normalized};
}

// fc1 and the GELU after it. Where our GELU kernel runs, fc1's bias is added
// inside it (kernels/gelu.hpp) rather than by the product.
torch::Tensor linear_gelu(const torch::nn::Linear& layer, const torch::Tensor& x) {
  if (!gelu_with_bias_uses_own_kernel(layer->bias)) return vit::gelu(linear(layer, x));
  return gelu_with_bias(vit::linear(x, compute_weight(layer->weight)), layer->bias);
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

AttentionImpl::AttentionImpl(const ModelConfig& cfg)
    : heads_(cfg.heads), head_dim_(cfg.head_dim()), attn_dropout_(cfg.attn_dropout) {
  qkv = register_module(
      "qkv",
      torch::nn::Linear(torch::nn::LinearOptions(cfg.dim, 3 * cfg.inner_dim()).bias(cfg.qkv_bias)));
  proj = register_module("proj", torch::nn::Linear(cfg.inner_dim(), cfg.dim));
  attn_drop = register_module("attn_drop", torch::nn::Dropout(cfg.attn_dropout));
  proj_drop = register_module("proj_drop", torch::nn::Dropout(cfg.dropout));
}

std::vector<torch::Tensor> AttentionImpl::split_heads(const torch::Tensor& x,
                                                      AttentionCall::Queries queries) {
  const int64_t B = x.size(0), I = heads_ * head_dim_;
  const auto& weight = compute_weight(qkv->weight);  // (3I, D): the rows of q, then k, then v
  const auto rows = [](const torch::Tensor& t, int64_t start, int64_t count) {
    return t.defined() ? t.narrow(/*dim=*/0, start, count) : t;
  };
  // x's projection onto `count` parts of rows [first, first + count I) of
  // qkv, split into heads: (B, H, N, Dh) each.
  const auto projected_heads = [&](int64_t first, int64_t count) {
    const auto part_weight = rows(weight, first * I, count * I);
    const auto part_bias = rows(qkv->bias, first * I, count * I);
    if (part_bias.defined() && split_heads_with_bias_uses_own_kernel(part_bias))
      return split_heads_with_bias(vit::linear(x, part_weight), part_bias, count, heads_,
                                   head_dim_);
    return vit::split_heads(
        vit::linear(x, part_weight, rows(compute_weight(qkv->bias), first * I, count * I)), count,
        heads_, head_dim_);
  };
  if (queries == AttentionCall::Queries::kAll) return projected_heads(0, 3);  // q, k, v
  // The class token's query alone: only the q rows of its one token.
  auto q = vit::linear(x.narrow(/*dim=*/1, /*start=*/0, /*length=*/1), rows(weight, 0, I),
                       rows(compute_weight(qkv->bias), 0, I))  // (B, 1, I)
               .view({B, 1, heads_, head_dim_})                // (B, 1, H, Dh)
               .transpose(1, 2);                               // (B, H, 1, Dh)
  auto kv = projected_heads(1, 2);                             // k, v
  return {q, kv[0], kv[1]};
}

torch::Tensor AttentionImpl::merge_heads(const torch::Tensor& x) {
  const int64_t B = x.size(0), Nq = x.size(2);
  return x
      .transpose(1, 2)                        // (B, Nq, H, Dh)
      .reshape({B, Nq, heads_ * head_dim_});  // (B, Nq, I)
}

std::pair<torch::Tensor, torch::Tensor> AttentionImpl::explicit_softmax(
    const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
    torch::ScalarType probs_dtype) {
  const double scale = 1.0 / std::sqrt(static_cast<double>(head_dim_));
  const auto heads_as_batch = [](const torch::Tensor& t) { return t.flatten(0, 1); };
  const auto scores = batched_matmul(heads_as_batch(q), heads_as_batch(k).transpose(1, 2));
  auto attn = vit::scaled_softmax(scores.view({q.size(0), q.size(1), q.size(2), k.size(2)}), scale,
                                  probs_dtype);  // (B, H, Nq, N)
  auto out = batched_matmul(heads_as_batch(attn_drop(attn).to(v.scalar_type())),
                            heads_as_batch(v));  // (B*H, Nq, Dh)
  return {out.view(q.sizes()), attn};
}

torch::Tensor AttentionImpl::fused(const torch::Tensor& x, AttentionCall::Queries queries) {
  const bool drops = is_training() && attn_dropout_ > 0.0;
  const double scale = 1.0 / std::sqrt(static_cast<double>(head_dim_));
  if (queries == AttentionCall::Queries::kAll && !drops &&
      attention_from_projection_will_use_own_kernel(x, qkv->bias, heads_, head_dim_))
    return attention_from_projection(vit::linear(x, compute_weight(qkv->weight)), qkv->bias, heads_,
                                     scale);
  const auto qkv_heads = split_heads(x, queries);
  const auto &q = qkv_heads[0], &k = qkv_heads[1], &v = qkv_heads[2];
#if TORCH_VERSION_MAJOR >= 2
  // SDPA on GPUs (flash and memory-efficient kernels), never on the CPU: there
  // its flash kernel's backward is much slower than the explicit products and
  // softmax. (measured: docs/benchmarks.md, "Why the own kernels")
  if (!q.is_cpu())
    return merge_heads(at::scaled_dot_product_attention(q, k, v, /*attn_mask=*/{},
                                                        /*dropout_p=*/drops ? attn_dropout_ : 0.0,
                                                        /*is_causal=*/false));
#endif
  // The probabilities straight in the product's dtype where that is bf16.
  const auto probs_dtype = v.scalar_type() == torch::kBFloat16 ? torch::kBFloat16 : torch::kFloat;
  return merge_heads(explicit_softmax(q, k, v, probs_dtype).first);
}

AttentionResult AttentionImpl::attend(const torch::Tensor& x, const AttentionCall& call) {
  AttentionResult result;
  torch::Tensor merged;  // (B, Nq, I)
  if (call.probabilities) {
    // The softmax runs in fp32 even under bf16 autocast, so the probabilities
    // handed to the analyses sum to 1 at full precision.
    const auto qkv_heads = split_heads(x, call.queries);
    torch::Tensor attended;  // (B, H, Nq, Dh)
    std::tie(attended, result.probabilities) =
        explicit_softmax(qkv_heads[0], qkv_heads[1], qkv_heads[2], torch::kFloat);
    merged = merge_heads(attended);
  } else {
    merged = fused(x, call.queries);
  }
  if (call.head_outputs) result.heads = merged;
  if (call.removed_head >= 0) merged = remove_head(merged, call.removed_head, call.removed_value);
  if (call.residual.defined() && !call.then_norm.is_empty())
    std::tie(result.out, result.normalized) =
        add_linear_then_norm(call.residual, proj, proj_drop, merged, call.then_norm);
  else
    result.out = call.residual.defined() ? add_linear(call.residual, proj, proj_drop, merged)
                                         : proj_drop(linear(proj, merged));  // (B, Nq, D)
  return result;
}

torch::Tensor AttentionImpl::remove_head(const torch::Tensor& merged, int64_t head,
                                         const torch::Tensor& value) {
  if (head >= heads_)
    throw Error("attention: removed head " + std::to_string(head) + ", expected 0.." +
                std::to_string(heads_ - 1));
  auto edited = merged.clone();                                        // (B, Nq, I)
  auto slice = edited.narrow(/*dim=*/2, head * head_dim_, head_dim_);  // (B, Nq, Dh)
  if (value.defined())
    slice.copy_(value.expand_as(slice));
  else
    slice.zero_();
  return edited;
}

torch::Tensor AttentionImpl::forward(const torch::Tensor& x) {
  return attend(x, {}).out;
}

MlpImpl::MlpImpl(const ModelConfig& cfg) {
  fc1 = register_module("fc1", torch::nn::Linear(cfg.dim, cfg.mlp_dim));
  fc2 = register_module("fc2", torch::nn::Linear(cfg.mlp_dim, cfg.dim));
  drop = register_module("drop", torch::nn::Dropout(cfg.dropout));
}

torch::Tensor MlpImpl::forward(const torch::Tensor& x) {
  return drop(linear(fc2, drop(linear_gelu(fc1, x))));  // (B, N, M) inside, (B, N, D) out
}

torch::Tensor MlpImpl::forward_onto(const torch::Tensor& residual, const torch::Tensor& x) {
  return add_linear(residual, fc2, drop, drop(linear_gelu(fc1, x)));
}

std::pair<torch::Tensor, torch::Tensor> MlpImpl::forward_onto_then_norm(
    const torch::Tensor& residual, const torch::Tensor& x, const torch::nn::LayerNorm& norm) {
  return add_linear_then_norm(residual, fc2, drop, drop(linear_gelu(fc1, x)), norm);
}

BlockImpl::BlockImpl(const ModelConfig& cfg, double drop_path_rate)
    : drop_path_rate(drop_path_rate) {
  norm1 = register_module("norm1", make_norm(cfg));
  attn = register_module("attn", Attention(cfg));
  norm2 = register_module("norm2", make_norm(cfg));
  mlp = register_module("mlp", Mlp(cfg));
}

torch::Tensor BlockImpl::forward(const torch::Tensor& x) {
  return run(x, {}).out;
}

// x + MSA(LN(x)), then + MLP(LN(.)). Each residual add takes the bias of the
// layer before it, in one pass where kernels/residual runs; for the class
// token alone, its residual is its own row. The attention's residual add and
// norm2 go in one pass too (kernels/residual_norm), and the MLP's with the
// next block's norm1 where `norms.next` asks for it.
torch::Tensor BlockImpl::drop_path(const torch::Tensor& branch) const {
  const double keep = 1.0 - drop_path_rate;
  // One draw per image (B, 1, 1): 1 / keep where kept, 0 where dropped.
  const auto mask =
      torch::empty({branch.size(0), 1, 1}, branch.options()).bernoulli_(keep).div_(keep);
  return branch * mask;
}

// Stochastic depth in training: x + drop_path(MSA(LN(x))), then the same for
// the MLP, with the residual adds apart from the kernels that fuse them.
BlockResult BlockImpl::run_dropping_paths(const torch::Tensor& x, AttentionCall call,
                                          const BlockNorms& norms) {
  const bool class_token = call.queries == AttentionCall::Queries::kClassToken;
  const auto residual = class_token ? x.narrow(/*dim=*/1, /*start=*/0, /*length=*/1) : x;
  call.residual = torch::Tensor();
  call.then_norm = nullptr;
  const auto& normalized =
      norms.normalized_input.defined() ? norms.normalized_input : normalized_for_linear(norm1, x);
  AttentionResult attended = attn->attend(normalized, call);
  const auto h = residual + drop_path(attended.out);                              // (B, Nq, D)
  const auto out = h + drop_path(mlp->forward(normalized_for_linear(norm2, h)));  // (B, Nq, D)
  BlockResult result{out, attended.probabilities, attended.heads, {}};
  if (!norms.next.is_empty()) result.normalized_out = normalized_for_linear(norms.next, out);
  return result;
}

BlockResult BlockImpl::run(const torch::Tensor& x, AttentionCall call, BlockSkip skip,
                           const BlockNorms& norms) {
  if (drop_path_rate > 0 && is_training() && !skip.attention && !skip.mlp)
    return run_dropping_paths(x, std::move(call), norms);
  const bool class_token = call.queries == AttentionCall::Queries::kClassToken;
  call.residual = class_token ? x.narrow(/*dim=*/1, /*start=*/0, /*length=*/1) : x;
  if (!skip.mlp) call.then_norm = norm2;
  AttentionResult attended;
  if (skip.attention) {
    attended.out = call.residual;
  } else {
    const auto& normalized =
        norms.normalized_input.defined() ? norms.normalized_input : normalized_for_linear(norm1, x);
    attended = attn->attend(normalized, call);
  }
  const auto& h = attended.out;  // (B, Nq, D)
  BlockResult result{h, attended.probabilities, attended.heads, {}};
  if (skip.mlp) return result;
  const auto& h_normalized =
      attended.normalized.defined() ? attended.normalized : normalized_for_linear(norm2, h);
  if (norms.next.is_empty())
    result.out = mlp->forward_onto(h, h_normalized);
  else
    std::tie(result.out, result.normalized_out) =
        mlp->forward_onto_then_norm(h, h_normalized, norms.next);
  return result;
}

VisionTransformerImpl::VisionTransformerImpl(const ModelConfig& cfg) : cfg_(cfg) {
  patch_embed = register_module("patch_embed", PatchEmbed(cfg));
  cls_token = register_parameter("cls_token", torch::zeros({1, 1, cfg.dim}));
  pos_embed = register_parameter("pos_embed", torch::zeros({1, cfg.num_patches() + 1, cfg.dim}));
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
  auto patches = patch_embed(images);                                      // (B, g*g, D)
  auto cls = compute_weight(cls_token).expand({patches.size(0), -1, -1});  // (B, 1, D)
  return pos_drop(torch::cat({cls.to(patches.scalar_type()), patches}, /*dim=*/1) +
                  compute_weight(pos_embed));  // (B, N, D)
}

torch::Tensor VisionTransformerImpl::pool(const torch::Tensor& tokens) {
  return cfg_.pool == Pool::kMean ? tokens.slice(/*dim=*/1, /*start=*/1).mean(1)  // (B, D)
                                  : tokens.select(/*dim=*/1, /*index=*/0);        // (B, D)
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

// x = x + attn(norm1(x)); x = x + mlp(norm2(x)), block after block, with each
// block's last residual add and the next block's norm1 in one pass
// (BlockNorms, kernels/residual_norm).
torch::Tensor VisionTransformerImpl::run_fused_blocks(torch::Tensor x, const BlockPass& pass) {
  const auto depth = static_cast<int64_t>(blocks->size());
  torch::Tensor normalized;  // the next block's norm1(x), from the block before
  for (int64_t i = pass.first; i < depth; ++i) {
    AttentionCall call;
    const bool last = i + 1 == depth;
    if (last && pass.head_rows_only && cfg_.pool == Pool::kCls)
      call.queries = AttentionCall::Queries::kClassToken;
    BlockNorms norms{normalized, last ? nullptr : block(i + 1).norm1};
    auto r = block(i).run(x, call, {}, norms);
    x = r.out;  // (B, N, D), or (B, 1, D) for the class token alone
    normalized = r.normalized_out;
  }
  return x;
}

// The same blocks, each on the explicit path, with the visitor around it.
torch::Tensor VisionTransformerImpl::run_visited_blocks(torch::Tensor x, const BlockPass& pass) {
  const auto depth = static_cast<int64_t>(blocks->size());
  for (int64_t i = pass.first; i < depth; ++i) {
    AttentionCall call;
    call.probabilities = true;
    BlockSkip skip;
    pass.visitor->before(i, call, skip);
    BlockResult r = block(i).run(x, std::move(call), skip);
    pass.visitor->after(i, r);
    x = r.out;  // (B, N, D)
  }
  return x;
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
  const int64_t embeddings = D + (cfg.num_patches() + 1) * D;
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
  const int64_t P = cfg.num_patches(), N = P + 1;
  const int64_t patch = P * cfg.channels * cfg.patch_size * cfg.patch_size * D;
  const int64_t attention = N * D * 3 * I + 2 * N * N * I + N * I * D;  // qkv, QK^T and AV, proj
  const int64_t mlp = 2 * N * D * M;
  const int64_t head = D * cfg.num_classes;
  return patch + cfg.depth * (attention + mlp) + head;
}

}  // namespace vit
