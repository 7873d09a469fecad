// Shape key: B batch, N tokens, Nq query rows, D width.
#include "vit/model/block.hpp"

#include <torch/torch.h>

#include "kernel_calls.hpp"

namespace vit {

MlpImpl::MlpImpl(const ModelConfig& cfg) {
  fc1 = register_module("fc1", torch::nn::Linear(cfg.dim, cfg.mlp_dim));
  fc2 = register_module("fc2", torch::nn::Linear(cfg.mlp_dim, cfg.dim));
  drop = register_module("drop", torch::nn::Dropout(cfg.dropout));
}

Branch MlpImpl::branch(const torch::Tensor& x) {
  return {fc2, drop, drop(linear_gelu(fc1, x))};  // fc2 reads (B, N, M)
}

torch::Tensor MlpImpl::forward(const torch::Tensor& x) {
  return branch(x).applied();  // (B, N, D)
}

BlockImpl::BlockImpl(const ModelConfig& cfg, double drop_path_rate)
    : drop_path_rate(drop_path_rate) {
  norm1 = register_module("norm1", make_norm(cfg));
  attn = register_module("attn", Attention(cfg));
  norm2 = register_module("norm2", make_norm(cfg));
  mlp = register_module("mlp", Mlp(cfg));
}

torch::Tensor BlockImpl::forward(const torch::Tensor& x) {
  return run(Residual(x)).out.tensor();
}

// The paper's block.
BlockResult BlockImpl::run(const Residual& x, const AttentionCall& call, BlockSkip skip) {
  // norm1(x) first, so that it comes with x's pending add, in one pass.
  AttentionResult attended;
  if (!skip.attention) attended = attn->attend(x.normalized(norm1), call);
  // For the class token alone, the residual is its own row.
  Residual h = call.queries == AttentionCall::Queries::kClassToken ? x.class_token() : x;
  if (!skip.attention) h = add(h, attn->project(attended.merged));  // h = x + attn(norm1(x))
  if (!skip.mlp) h = add(h, mlp->branch(h.normalized(norm2)));      // h + mlp(norm2(h))
  return {std::move(h), std::move(attended.probabilities), std::move(attended.heads)};
}

Residual BlockImpl::add(const Residual& x, const Branch& branch) const {
  if (drop_path_rate > 0 && is_training()) return x + drop_path(branch.applied());
  return x + branch;
}

torch::Tensor BlockImpl::drop_path(const torch::Tensor& branch) const {
  const double keep = 1.0 - drop_path_rate;
  // One draw per image (B, 1, 1): 1 / keep where kept, 0 where dropped.
  const auto mask =
      torch::empty({branch.size(0), 1, 1}, branch.options()).bernoulli_(keep).div_(keep);
  return branch * mask;
}

}  // namespace vit
