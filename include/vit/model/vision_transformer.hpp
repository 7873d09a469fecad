#pragma once
// Vision Transformer (Dosovitskiy et al., 2020), pre-norm, timm parameter names.
//
// Shape key:  B batch, C channels, S image side, P patch side, g = S / P grid side,
//             N = g*g + 1 tokens (class token first), D model width,
//             H heads, Dh head width, I = H * Dh attention inner width, M MLP width,
//             K classes.
#include <vector>

#include <torch/nn/module.h>
#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/dropout.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/normalization.h>
#include <torch/nn/pimpl.h>

#include "vit/config.hpp"

namespace vit {

// Patch embedding: a convolution with kernel = stride = patch. (B,C,S,S) -> (B, g*g, D)
class PatchEmbedImpl : public torch::nn::Module {
 public:
  explicit PatchEmbedImpl(const ModelConfig& cfg);
  torch::Tensor forward(const torch::Tensor& x);
  torch::nn::Conv2d proj{nullptr};
};
TORCH_MODULE(PatchEmbed);

// Multi-head self-attention with a fused qkv projection. (B,N,D) -> (B,N,D)
class AttentionImpl : public torch::nn::Module {
 public:
  explicit AttentionImpl(const ModelConfig& cfg);
  // Fast path: the fused kernel on LibTorch >= 2.0, the explicit softmax before.
  torch::Tensor forward(const torch::Tensor& x);
  // Explicit softmax; also returns the attention probabilities (B,H,N,N).
  std::pair<torch::Tensor, torch::Tensor> forward_with_attention(const torch::Tensor& x);
  // The class token's row of forward(x) alone: its query against every
  // token's key and value. (B,N,D) -> (B,1,D)
  torch::Tensor forward_class_token(const torch::Tensor& x);
  // residual + forward(x), and residual + forward_class_token(x): the output
  // projection's bias joins the residual add (kernels/residual).
  torch::Tensor forward_onto(const torch::Tensor& residual, const torch::Tensor& x);
  torch::Tensor forward_class_token_onto(const torch::Tensor& residual, const torch::Tensor& x);

  torch::nn::Linear qkv{nullptr}, proj{nullptr};
  torch::nn::Dropout attn_drop{nullptr}, proj_drop{nullptr};

 private:
  // (B,N,D) -> q, k, v each (B,H,N,Dh)
  std::vector<torch::Tensor> split_heads(const torch::Tensor& x);
  // (B,N,D) -> q (B,H,1,Dh) of the class token, k and v (B,H,N,Dh) of every token
  std::vector<torch::Tensor> split_heads_class_query(const torch::Tensor& x);
  // softmax(q k^T / sqrt(Dh)) v: (B,H,Nq,Dh) with the fused kernel on LibTorch >= 2.0
  torch::Tensor attend(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v);
  // The same, explicit, with the probabilities (B,H,Nq,N), computed in fp32
  // and returned in `probs_dtype` (fp32, or bf16 to feed a bf16 product)
  std::pair<torch::Tensor, torch::Tensor> attend_explicitly(const torch::Tensor& q,
                                                            const torch::Tensor& k,
                                                            const torch::Tensor& v,
                                                            torch::ScalarType probs_dtype);
  torch::Tensor merge_heads(const torch::Tensor& x);  // (B,H,N,Dh) -> (B,N,I)
  // What the output projection reads: every token's attended values (B,N,I),
  // or the class token's alone (B,1,I)
  torch::Tensor attended(const torch::Tensor& x);
  torch::Tensor class_token_attended(const torch::Tensor& x);
  int64_t heads_, head_dim_;
  double attn_dropout_;
};
TORCH_MODULE(Attention);

// Two-layer GELU MLP. (B,N,D) -> (B,N,D)
class MlpImpl : public torch::nn::Module {
 public:
  explicit MlpImpl(const ModelConfig& cfg);
  torch::Tensor forward(const torch::Tensor& x);
  // residual + forward(x), fc2's bias joining the residual add (kernels/residual).
  torch::Tensor forward_onto(const torch::Tensor& residual, const torch::Tensor& x);
  torch::nn::Linear fc1{nullptr}, fc2{nullptr};
  torch::nn::Dropout drop{nullptr};
};
TORCH_MODULE(Mlp);

// Pre-norm transformer block: x + attn(norm1(x)), then x + mlp(norm2(x)).
class BlockImpl : public torch::nn::Module {
 public:
  explicit BlockImpl(const ModelConfig& cfg);
  torch::Tensor forward(const torch::Tensor& x);
  std::pair<torch::Tensor, torch::Tensor> forward_with_attention(const torch::Tensor& x);
  // The class token's row of forward(x) alone. (B,N,D) -> (B,1,D)
  torch::Tensor forward_class_token(const torch::Tensor& x);
  torch::nn::LayerNorm norm1{nullptr}, norm2{nullptr};
  Attention attn{nullptr};
  Mlp mlp{nullptr};
};
TORCH_MODULE(Block);

struct LogitsAndAttention {
  torch::Tensor logits;                  // (B,K)
  std::vector<torch::Tensor> attention;  // one (B,H,N,N) per layer, rows sum to 1
};

class VisionTransformerImpl : public torch::nn::Module {
 public:
  explicit VisionTransformerImpl(const ModelConfig& cfg);
  // (B,C,S,S) -> (B,K). With pool "cls" the last block computes the class
  // token alone, the one token the head reads: the same logits and gradients
  // as the full block, for about 3/4 less of its work.
  torch::Tensor forward(const torch::Tensor& images);
  LogitsAndAttention forward_with_attention(const torch::Tensor& images);
  const ModelConfig& config() const { return cfg_; }

  PatchEmbed patch_embed{nullptr};
  torch::Tensor cls_token, pos_embed;  // (1,1,D), (1,N,D)
  torch::nn::Dropout pos_drop{nullptr};
  torch::nn::ModuleList blocks{nullptr};
  torch::nn::LayerNorm norm{nullptr};
  torch::nn::Linear head{nullptr};

 private:
  torch::Tensor embed(const torch::Tensor& images);     // (B,C,S,S) -> (B,N,D)
  torch::Tensor classify(const torch::Tensor& tokens);  // (B,N,D) -> (B,K)
  void init_weights();
  ModelConfig cfg_;
};
TORCH_MODULE(VisionTransformer);

// Exact parameter count and forward FLOPs (multiply-adds, as in timm's tables) for a config,
// without building the model.
int64_t count_parameters(const ModelConfig& cfg);
int64_t forward_flops(const ModelConfig& cfg);

}  // namespace vit
