#pragma once
// Shape key: B batch, N tokens, Nq query rows (N, or 1 for the class token
// alone), D model width, H heads, I = H * Dh attention inner width, M MLP width.
#include <torch/nn/module.h>
#include <torch/nn/modules/normalization.h>
#include <torch/nn/pimpl.h>

#include "vit/config.hpp"
#include "vit/model/attention.hpp"
#include "vit/model/residual.hpp"

namespace vit {

// Analyses (branch ablation): a block's attention or MLP branch left out,
// its residual kept: x + attn(norm1(x)) becomes x, or h + mlp(norm2(h)) becomes h.
struct BlockSkip {
  bool attention = false;
  bool mlp = false;
};

struct BlockResult {
  Residual out;                 // (B,Nq,D)
  torch::Tensor probabilities;  // (B,H,Nq,N) when asked for
  torch::Tensor heads;          // (B,Nq,I) when asked for
};

// Two-layer GELU MLP. (B,N,D) -> (B,N,D)
class MlpImpl : public torch::nn::Module {
 public:
  explicit MlpImpl(const ModelConfig& cfg);
  torch::Tensor forward(const torch::Tensor& x);
  // The same as a branch whose fc2 the residual add applies
  // (Residual::operator+): drop(fc2(drop(gelu(fc1(x))))).
  Branch branch(const torch::Tensor& x);
  torch::nn::Linear fc1{nullptr}, fc2{nullptr};
  torch::nn::Dropout drop{nullptr};
};
TORCH_MODULE(Mlp);

// Pre-norm transformer block: h = x + attn(norm1(x)), then h + mlp(norm2(h)).
class BlockImpl : public torch::nn::Module {
 public:
  // `drop_path_rate`: stochastic depth, the chance in training that an
  // image's residual branch is dropped (the kept ones scaled by 1 / (1 - rate)).
  explicit BlockImpl(const ModelConfig& cfg, double drop_path_rate = 0.0);
  torch::Tensor forward(const torch::Tensor& x);
  // The same on the residual stream, for the queries `call` names, with a
  // branch left out where `skip` says, returning what `call` asks for.
  BlockResult run(const Residual& x, const AttentionCall& call = {}, BlockSkip skip = {});
  torch::nn::LayerNorm norm1{nullptr}, norm2{nullptr};
  Attention attn{nullptr};
  Mlp mlp{nullptr};
  double drop_path_rate = 0.0;

 private:
  // x + drop_path(branch): the branch left to the add (Residual::operator+),
  // or, when paths are dropped, computed apart and scaled.
  Residual add(const Residual& x, const Branch& branch) const;
  torch::Tensor drop_path(const torch::Tensor& branch) const;  // (B, Nq, D)
};
TORCH_MODULE(Block);

}  // namespace vit
