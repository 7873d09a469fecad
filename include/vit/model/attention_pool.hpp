#pragma once
// Shape key: B batch, Np patch tokens, D model width, H heads, Dh = D / H.
#include <torch/nn/module.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/normalization.h>
#include <torch/nn/pimpl.h>

#include "vit/config.hpp"
#include "vit/model/block.hpp"

namespace vit {

// What the attention pool computes: the pooled token and its query's
// attention over the tokens it read.
struct AttentionPoolResult {
  torch::Tensor pooled;         // (B,D)
  torch::Tensor probabilities;  // (B,H,1,Np), rows sum to 1
};

// timm's AttentionPoolLatent (SigLIP's head, model.pool "map"): one learned
// latent query attends over the patch tokens, then a pre-norm MLP on the
// result: p = proj(attn(q(latent), kv(x))); p + mlp(norm(p)). (B,Np,D) -> (B,D)
class AttentionPoolImpl : public torch::nn::Module {
 public:
  explicit AttentionPoolImpl(const ModelConfig& cfg);
  torch::Tensor forward(const torch::Tensor& x);
  // The same, with the query's attention probabilities (explicit softmax, fp32).
  AttentionPoolResult pool(const torch::Tensor& x);

  torch::Tensor latent;  // (1,1,D)
  torch::nn::Linear q{nullptr}, kv{nullptr}, proj{nullptr};
  torch::nn::LayerNorm norm{nullptr};
  Mlp mlp{nullptr};

 private:
  int64_t heads_;
};
TORCH_MODULE(AttentionPool);

}  // namespace vit
