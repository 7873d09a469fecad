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

// Branch ablation: x + attn(norm1(x)) becomes x, or h + mlp(norm2(h)) becomes h.
struct BlockSkip {
  bool attention = false;
  bool mlp = false;
};

struct BlockResult {
  Residual out;                 // (B,Nq,D)
  torch::Tensor probabilities;  // (B,H,Nq,N) when asked for
  torch::Tensor heads;          // (B,Nq,I) when asked for
};

// Two-layer MLP with the model's activation. (B,N,D) -> (B,N,D)
class MlpImpl : public torch::nn::Module {
 public:
  explicit MlpImpl(const ModelConfig& cfg);
  // A `hidden`-wide MLP on `dim` tokens (the attention pool's).
  MlpImpl(int64_t dim, int64_t hidden, Activation activation, double dropout);
  torch::Tensor forward(const torch::Tensor& x);
  // drop(fc2(drop(act(fc1(x))))) as a branch whose fc2 the residual add applies.
  Branch branch(const torch::Tensor& x);
  torch::nn::Linear fc1{nullptr}, fc2{nullptr};
  torch::nn::Dropout drop{nullptr};

 private:
  Activation activation_;
};
TORCH_MODULE(Mlp);

// LayerScale (CaiT, Touvron et al., 2021): a branch scaled per channel by a
// learned gamma (D). (B,N,D) -> (B,N,D)
class LayerScaleImpl : public torch::nn::Module {
 public:
  LayerScaleImpl(int64_t dim, double init_values);
  torch::Tensor forward(const torch::Tensor& x) const;
  torch::Tensor gamma;
};
TORCH_MODULE(LayerScale);

// Pre-norm transformer block: h = x + ls1(attn(norm1(x))), then
// h + ls2(mlp(norm2(h))); ls1 and ls2 are the identity without LayerScale.
class BlockImpl : public torch::nn::Module {
 public:
  // `drop_path_rate`: the chance in training that an image's residual branch is
  // dropped (the kept ones scaled by 1 / (1 - rate)).
  explicit BlockImpl(const ModelConfig& cfg, double drop_path_rate = 0.0);
  torch::Tensor forward(const torch::Tensor& x);
  // The same on the residual stream for the query `rows`, returning what `call` asks for.
  BlockResult run(Residual x, const AttentionCall& call = {}, BlockSkip skip = {},
                  QueryRows rows = QueryRows::kAll);
  torch::nn::LayerNorm norm1{nullptr}, norm2{nullptr};
  Attention attn{nullptr};
  Mlp mlp{nullptr};
  LayerScale ls1{nullptr}, ls2{nullptr};  // with model.init_values > 0
  double drop_path_rate = 0.0;

 private:
  // x + drop_path(ls(branch))
  Residual add(Residual& x, const Branch& branch, const LayerScale& ls) const;
  torch::Tensor drop_path(const torch::Tensor& branch) const;  // (B, Nq, D)
};
TORCH_MODULE(Block);

}  // namespace vit
