#pragma once
// Vision Transformer (Dosovitskiy et al., 2020), pre-norm, with timm's
// VisionTransformer options and parameter names (docs/models.md).
// Shape key: B batch, C channels, S image side, P patch side, g = S / P grid side,
// F prefix tokens (class, distillation, R registers), N = F + g*g tokens, D width,
// H heads, Dh head width, I = H * Dh attention inner width, M MLP width, K classes.
#include <vector>

#include <torch/nn/module.h>
#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/dropout.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/normalization.h>
#include <torch/nn/pimpl.h>

#include "vit/config.hpp"
#include "vit/model/attention_pool.hpp"
#include "vit/model/block.hpp"

namespace vit {

// Patch embedding: a convolution with kernel = stride = patch. (B,C,S,S) -> (B, g*g, D)
class PatchEmbedImpl : public torch::nn::Module {
 public:
  explicit PatchEmbedImpl(const ModelConfig& cfg);
  torch::Tensor forward(const torch::Tensor& x);
  torch::nn::Conv2d proj{nullptr};
};
TORCH_MODULE(PatchEmbed);

struct LogitsAndAttention {
  torch::Tensor logits;                  // (B,K)
  std::vector<torch::Tensor> attention;  // one (B,H,N,N) per layer, rows sum to 1
  torch::Tensor pool_attention;          // pool "map": the pool's query's, (B,H,1,P)
};

// What an analysis reads or changes around each block of the model's one block
// loop (forward_blocks), so no analysis writes a loop of its own.
class BlockVisitor {
 public:
  virtual ~BlockVisitor() = default;
  // Before block `layer`: its attention call and skips, to change. They come set to
  // the explicit fp32 softmax with its probabilities, nothing removed or skipped.
  virtual void before(int64_t /*layer*/, AttentionCall& /*call*/, BlockSkip& /*skip*/) {}
  // After it: what it returned. `result.out` may be replaced (patching:
  // result.out = Residual(tensor)); the next block reads whatever is there.
  virtual void after(int64_t /*layer*/, BlockResult& /*result*/) {}
};

struct BlockPass {
  int64_t first = 0;  // the first block to run; the tokens given are the stream entering it
  // Called around each block, on the explicit path; nullptr: the fast, fused path.
  BlockVisitor* visitor = nullptr;
};

// kRandom: timm's initial values. kFromFile: the values are only allocated, for
// a loader that replaces every one of them (no random draws for a large model).
enum class WeightInit { kRandom, kFromFile };

// The model as timm writes it: forward_head(forward_features(images)).
class VisionTransformerImpl : public torch::nn::Module {
 public:
  explicit VisionTransformerImpl(const ModelConfig& cfg, WeightInit init = WeightInit::kRandom);
  // (B,C,S,S) -> (B,K). The last block computes only the rows the head reads, with
  // the same logits and gradients as the full block.
  torch::Tensor forward(const torch::Tensor& images);
  // The embeddings, every block and the final norm: (B,C,S,S) -> (B,N,D).
  torch::Tensor forward_features(const torch::Tensor& images, const BlockPass& pass = {});
  // Pooling, fc_norm and the head (distilled: the two heads' mean): (B,N,D) -> (B,K);
  // without a head (num_classes 0), the pooled features (B,D).
  torch::Tensor forward_head(const torch::Tensor& features);
  // The logits and every layer's attention probabilities, in one explicit pass.
  LogitsAndAttention forward_with_attention(const torch::Tensor& images);
  const ModelConfig& config() const { return cfg_; }
  // Blocks that recompute their activations in the backward pass (timm's
  // set_grad_checkpointing); only with gradients on, on the fast path.
  void set_grad_checkpointing(GradCheckpointing checkpointing) { checkpointing_ = checkpointing; }

  // The pieces of forward_features. embed: (B,C,S,S) -> (B,N,D), the prefix tokens
  // and embedded patches after norm_pre: the stream entering block 0.
  torch::Tensor embed(const torch::Tensor& images);
  // (B,N,D) stream entering block pass.first -> the stream after the last block.
  torch::Tensor forward_blocks(torch::Tensor tokens, const BlockPass& pass = {});
  // The final norm on every token: (B,N,D) -> (B,N,D); the identity with fc_norm.
  torch::Tensor final_norm(const torch::Tensor& tokens);
  // forward_head(final_norm(tokens)): any layer's readout. (B,N,D) -> (B,K)
  torch::Tensor stream_logits(const torch::Tensor& tokens);
  // (B,N,D) -> (B,D): what the head reads, before fc_norm.
  torch::Tensor pool(const torch::Tensor& tokens);
  // fc_norm and the head on pooled features: (B,D) -> (B,K), or (B,D) without a head.
  torch::Tensor classify(torch::Tensor pooled);
  // The patches' rows, after the prefix tokens: (B,N,D) -> (B,g*g,D), a view.
  torch::Tensor patch_tokens(const torch::Tensor& tokens) const;

  PatchEmbed patch_embed{nullptr};
  // (1,1,D) each where the options have them; undefined otherwise.
  torch::Tensor cls_token, dist_token;
  torch::Tensor reg_token;  // (1,R,D); undefined without registers
  torch::Tensor pos_embed;  // (1,P+g*g,D): P = ModelConfig::embedded_prefix()
  torch::nn::Dropout pos_drop{nullptr};
  torch::nn::LayerNorm norm_pre{nullptr};  // with pre_norm
  torch::nn::ModuleList blocks{nullptr};
  torch::nn::LayerNorm norm{nullptr};     // without fc_norm
  torch::nn::LayerNorm fc_norm{nullptr};  // with fc_norm
  AttentionPool attn_pool{nullptr};       // with pool "map"
  torch::nn::Linear head{nullptr};        // with num_classes > 0
  torch::nn::Linear head_dist{nullptr};   // distilled, with num_classes > 0

 private:
  void init_weights();
  BlockImpl& block(int64_t index);
  // The rows of the last block's output the head reads; pool "cls": (B,1,D).
  QueryRows head_rows() const;
  // forward_blocks with the last block computing `last_rows`.
  torch::Tensor run_blocks(torch::Tensor tokens, const BlockPass& pass, QueryRows last_rows);
  ModelConfig cfg_;
  GradCheckpointing checkpointing_;
};
TORCH_MODULE(VisionTransformer);

// Exact parameter count and forward FLOPs (multiply-adds, as timm's tables), without
// building the model.
int64_t count_parameters(const ModelConfig& cfg);
int64_t forward_flops(const ModelConfig& cfg);

}  // namespace vit
