// Shape key: B batch, N tokens, Nq query rows, D width, H heads, Dh head
// width, I = H*Dh.
#include "vit/model/attention.hpp"

#include <cmath>

#include <torch/torch.h>
#include <torch/version.h>

#include "kernel_calls.hpp"
#include "layer_init.hpp"
#include "vit/error.hpp"
#include "vit/kernels/attention_from_projection.hpp"
#include "vit/kernels/batched_matmul.hpp"
#include "vit/kernels/head_split.hpp"
#include "vit/kernels/linear.hpp"
#include "vit/kernels/softmax.hpp"
#include "vit/model/weight_substitution.hpp"

namespace vit {

AttentionImpl::AttentionImpl(const ModelConfig& cfg)
    : heads_(cfg.heads), head_dim_(cfg.head_dim()), attn_dropout_(cfg.attn_dropout) {
  qkv = register_module("qkv", make_linear(cfg.dim, 3 * cfg.inner_dim(), cfg.qkv_bias));
  proj = register_module("proj", make_linear(cfg.inner_dim(), cfg.dim));
  attn_drop = register_module("attn_drop", torch::nn::Dropout(cfg.attn_dropout));
  proj_drop = register_module("proj_drop", torch::nn::Dropout(cfg.dropout));
}

std::vector<torch::Tensor> AttentionImpl::split_heads(const torch::Tensor& x,
                                                      QueryRows query_rows) {
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
  if (query_rows == QueryRows::kAll) return projected_heads(0, 3);  // q, k, v
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

// probs_dtype: fp32, or bf16 to feed a bf16 product.
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

// Straight from the qkv projection on CPUs with AMX (kernels/attention_from_projection),
// SDPA's fused kernels on GPUs (LibTorch >= 2.0), the explicit softmax elsewhere.
torch::Tensor AttentionImpl::fused(const torch::Tensor& x, QueryRows rows) {
  const bool drops = is_training() && attn_dropout_ > 0.0;
  const double scale = 1.0 / std::sqrt(static_cast<double>(head_dim_));
  if (rows == QueryRows::kAll && !drops &&
      attention_from_projection_will_use_own_kernel(x, qkv->bias, heads_, head_dim_))
    return attention_from_projection(vit::linear(x, compute_weight(qkv->weight)), qkv->bias, heads_,
                                     scale);
  const auto qkv_heads = split_heads(x, rows);
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

AttentionResult AttentionImpl::attend(const torch::Tensor& x, const AttentionCall& call,
                                      QueryRows rows) {
  AttentionResult result;
  if (call.probabilities) {
    // The softmax runs in fp32 even under bf16 autocast, so the probabilities
    // handed to the analyses sum to 1 at full precision.
    const auto qkv_heads = split_heads(x, rows);
    torch::Tensor attended;  // (B, H, Nq, Dh)
    std::tie(attended, result.probabilities) =
        explicit_softmax(qkv_heads[0], qkv_heads[1], qkv_heads[2], torch::kFloat);
    result.merged = merge_heads(attended);
  } else {
    result.merged = fused(x, rows);
  }
  if (call.head_outputs) result.heads = result.merged;
  if (call.removal.head >= 0) result.merged = remove_head(result.merged, call.removal);
  return result;
}

Branch AttentionImpl::project(const torch::Tensor& merged) {
  return {proj, proj_drop, merged};
}

torch::Tensor AttentionImpl::remove_head(const torch::Tensor& merged, const HeadRemoval& removal) {
  if (removal.head >= heads_)
    throw Error("attention: removed head " + std::to_string(removal.head) + ", expected 0.." +
                std::to_string(heads_ - 1));
  auto edited = merged.clone();                                                // (B, Nq, I)
  auto slice = edited.narrow(/*dim=*/2, removal.head * head_dim_, head_dim_);  // (B, Nq, Dh)
  if (removal.value.defined())
    slice.copy_(removal.value.expand_as(slice));
  else
    slice.zero_();
  return edited;
}

torch::Tensor AttentionImpl::forward(const torch::Tensor& x) {
  return project(attend(x).merged).applied();  // (B, N, D)
}

}  // namespace vit
