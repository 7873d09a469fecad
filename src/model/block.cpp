// Shape key: B batch, N tokens, Nq query rows, D width.
#include "vit/model/block.hpp"

#include <torch/torch.h>

#include "kernel_calls.hpp"
#include "layer_init.hpp"
#include "vit/model/weight_substitution.hpp"

namespace vit {

namespace {

// The activations the fused kernels do not take; exact GELU goes through
// kernel_calls' linear_gelu with its layer.
torch::Tensor unfused_activation(const torch::Tensor& x, Activation activation) {
  if (activation == Activation::kGeluTanh) return torch::gelu(x, /*approximate=*/"tanh");
  return x * torch::sigmoid(1.702 * x);  // QuickGELU
}

}  // namespace

MlpImpl::MlpImpl(const ModelConfig& cfg)
    : MlpImpl(cfg.dim, cfg.mlp_dim, cfg.act_layer, cfg.dropout) {}

MlpImpl::MlpImpl(int64_t dim, int64_t hidden, Activation activation, double dropout)
    : activation_(activation) {
  fc1 = register_module("fc1", make_linear(dim, hidden));
  fc2 = register_module("fc2", make_linear(hidden, dim));
  drop = register_module("drop", torch::nn::Dropout(dropout));
}

Branch MlpImpl::branch(const torch::Tensor& x) {
  const auto hidden = activation_ == Activation::kGelu
                          ? linear_gelu(fc1, x)
                          : unfused_activation(linear(fc1, x), activation_);
  return {fc2, drop, drop(hidden)};  // fc2 reads (B, N, M)
}

torch::Tensor MlpImpl::forward(const torch::Tensor& x) {
  return branch(x).applied();  // (B, N, D)
}

LayerScaleImpl::LayerScaleImpl(int64_t dim, double init_values) {
  gamma = register_parameter("gamma", torch::full({dim}, init_values));
}

torch::Tensor LayerScaleImpl::forward(const torch::Tensor& x) const {
  return x * compute_weight(gamma);  // (B, N, D) * (D)
}

BlockImpl::BlockImpl(const ModelConfig& cfg, double drop_path_rate)
    : drop_path_rate(drop_path_rate) {
  norm1 = register_module("norm1", make_norm(cfg));
  attn = register_module("attn", Attention(cfg));
  norm2 = register_module("norm2", make_norm(cfg));
  mlp = register_module("mlp", Mlp(cfg));
  if (cfg.layer_scale()) {
    ls1 = register_module("ls1", LayerScale(cfg.dim, cfg.init_values));
    ls2 = register_module("ls2", LayerScale(cfg.dim, cfg.init_values));
  }
}

torch::Tensor BlockImpl::forward(const torch::Tensor& x) {
  return run(Residual(x)).out.tensor();
}

// The paper's block.
BlockResult BlockImpl::run(Residual x, const AttentionCall& call, BlockSkip skip, QueryRows rows) {
  // norm1(x) first, so that it comes with x's pending add, in one pass.
  AttentionResult attended;
  if (!skip.attention) attended = attn->attend(x.normalized(norm1), call, rows);
  // For the class token alone, the residual is its own row.
  Residual h = rows == QueryRows::kClassToken ? x.class_token() : std::move(x);
  if (!skip.attention) h = add(h, attn->project(attended.merged), ls1);  // x + ls1(attn(norm1(x)))
  if (!skip.mlp) h = add(h, mlp->branch(h.normalized(norm2)), ls2);      // h + ls2(mlp(norm2(h)))
  return {std::move(h), std::move(attended.probabilities), std::move(attended.heads)};
}

// The branch is left to the add (Residual::operator+), or, with LayerScale or
// dropped paths, computed apart first.
Residual BlockImpl::add(Residual& x, const Branch& branch, const LayerScale& ls) const {
  const bool dropping = drop_path_rate > 0 && is_training();
  if (ls.is_empty() && !dropping) return x + branch;  // the add applies the branch, fused
  auto t = branch.applied();                          // (B, Nq, D)
  if (!ls.is_empty()) t = ls->forward(t);
  return x + (dropping ? drop_path(t) : t);
}

torch::Tensor BlockImpl::drop_path(const torch::Tensor& branch) const {
  const double keep = 1.0 - drop_path_rate;
  // One draw per image (B, 1, 1): 1 / keep where kept, 0 where dropped.
  const auto mask =
      torch::empty({branch.size(0), 1, 1}, branch.options()).bernoulli_(keep).div_(keep);
  return branch * mask;
}

}  // namespace vit
