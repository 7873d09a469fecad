#pragma once
// Vision Transformer (Dosovitskiy et al., 2020), pre-norm, timm parameter names.
//
// Shape key:  B batch, C channels, S image side, P patch side, g = S / P grid side,
//             N = g*g + 1 tokens (class token first), D model width,
//             H heads, Dh head width, I = H * Dh attention inner width, M MLP width,
//             K classes.
#include <utility>
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

// Which queries an attention layer computes, and what it returns.
struct AttentionCall {
  // Every token's row, or the class token's alone: with pool "cls" the last
  // block needs nothing else, for about 3/4 less of its work.
  enum class Queries { kAll, kClassToken } queries = Queries::kAll;
  // Also return the probabilities (B,H,Nq,N), from an explicit softmax in
  // fp32 (the analyses' path); otherwise the fastest kernel runs.
  bool probabilities = false;
  // Added to the output: the residual stream, so that the output projection's
  // bias joins the residual add in one pass (kernels/residual). Undefined:
  // nothing is added.
  torch::Tensor residual;
  // Analyses (head ablation): head `removed_head`'s slice of the merged heads,
  // before the output projection, is replaced by `removed_value` (broadcast to
  // (B,Nq,Dh)), or by zeros when that is undefined. -1: no head is removed.
  int64_t removed_head = -1;
  torch::Tensor removed_value;
  // Also return the merged heads (B,Nq,I), before the output projection.
  bool head_outputs = false;
  // With a residual: also return then_norm(out) as the next linear layer
  // reads it, computed with the residual add in one pass where
  // kernels/residual_norm runs. Empty: not asked for.
  torch::nn::LayerNorm then_norm{nullptr};
};

struct AttentionResult {
  torch::Tensor out;            // (B,Nq,D): Nq = N, or 1 for the class token alone
  torch::Tensor probabilities;  // (B,H,Nq,N) when asked for, rows sum to 1
  torch::Tensor heads;          // (B,Nq,I) when asked for: every head's output, side by side
  torch::Tensor normalized;     // (B,Nq,D): then_norm(out), when asked for
};

// Multi-head self-attention with a fused qkv projection. (B,N,D) -> (B,N,D)
class AttentionImpl : public torch::nn::Module {
 public:
  explicit AttentionImpl(const ModelConfig& cfg);
  // MSA(x) = softmax(q k^T / sqrt(Dh)) v, then the output projection.
  torch::Tensor forward(const torch::Tensor& x);
  // The same, with the choices of AttentionCall: the one attention function.
  AttentionResult attend(const torch::Tensor& x, const AttentionCall& call);

  torch::nn::Linear qkv{nullptr}, proj{nullptr};
  torch::nn::Dropout attn_drop{nullptr}, proj_drop{nullptr};

 private:
  // (B,N,D) -> q, k, v each (B,H,N,Dh); q (B,H,1,Dh) of the class token alone
  // for Queries::kClassToken
  std::vector<torch::Tensor> split_heads(const torch::Tensor& x, AttentionCall::Queries queries);
  // softmax(q k^T / sqrt(Dh)) v of x's heads, merged, (B,Nq,I): straight from
  // the qkv projection on CPUs with AMX (kernels/attention), SDPA's fused
  // kernels on GPUs (LibTorch >= 2.0), the explicit softmax elsewhere
  torch::Tensor fused(const torch::Tensor& x, AttentionCall::Queries queries);
  // The same, explicit, with the probabilities (B,H,Nq,N), computed in fp32
  // and returned in `probs_dtype` (fp32, or bf16 to feed a bf16 product)
  std::pair<torch::Tensor, torch::Tensor> explicit_softmax(const torch::Tensor& q,
                                                           const torch::Tensor& k,
                                                           const torch::Tensor& v,
                                                           torch::ScalarType probs_dtype);
  torch::Tensor merge_heads(const torch::Tensor& x);  // (B,H,Nq,Dh) -> (B,Nq,I)
  // `merged` (B,Nq,I) with head `head`'s Dh columns set to `value`, or to zeros
  torch::Tensor remove_head(const torch::Tensor& merged, int64_t head, const torch::Tensor& value);
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
  // The same and norm(it) as the next linear layer reads it, in one pass
  // where kernels/residual_norm runs: {sum, normalized}.
  std::pair<torch::Tensor, torch::Tensor> forward_onto_then_norm(const torch::Tensor& residual,
                                                                 const torch::Tensor& x,
                                                                 const torch::nn::LayerNorm& norm);
  torch::nn::Linear fc1{nullptr}, fc2{nullptr};
  torch::nn::Dropout drop{nullptr};
};
TORCH_MODULE(Mlp);

struct BlockResult {
  torch::Tensor out;             // (B,Nq,D)
  torch::Tensor probabilities;   // (B,H,Nq,N) when asked for
  torch::Tensor heads;           // (B,Nq,I) when asked for
  torch::Tensor normalized_out;  // BlockNorms::next(out), when asked for
};

// The LayerNorms at a block's two ends, for the forward pass that runs the
// blocks one after the other (VisionTransformerImpl::forward): each block's
// last residual add and the next block's norm1 then go in one pass
// (kernels/residual_norm).
struct BlockNorms {
  // norm1(x) as the block's first linear layer reads it, from the block
  // before; undefined: computed here.
  torch::Tensor normalized_input;
  // Applied to the output into BlockResult::normalized_out; empty: not asked for.
  torch::nn::LayerNorm next{nullptr};
};

// Analyses (branch ablation): a block's attention or MLP branch left out,
// its residual kept: x + MSA(LN(x)) becomes x, or h + MLP(LN(h)) becomes h.
struct BlockSkip {
  bool attention = false;
  bool mlp = false;
};

// Pre-norm transformer block: x + MSA(LN(x)), then x + MLP(LN(x)).
class BlockImpl : public torch::nn::Module {
 public:
  // `drop_path_rate`: stochastic depth, the chance in training that an
  // image's residual branch is dropped (the kept ones scaled by 1 / (1 - rate)).
  explicit BlockImpl(const ModelConfig& cfg, double drop_path_rate = 0.0);
  torch::Tensor forward(const torch::Tensor& x);
  // The same, for the queries `call` names, returning the probabilities if
  // asked (call.residual, the block's own input, and call.then_norm, norm2,
  // are set here); `norms` joins the block's ends to its neighbours' norms.
  BlockResult run(const torch::Tensor& x, AttentionCall call, BlockSkip skip = {},
                  const BlockNorms& norms = {});
  torch::nn::LayerNorm norm1{nullptr}, norm2{nullptr};
  Attention attn{nullptr};
  Mlp mlp{nullptr};
  double drop_path_rate = 0.0;

 private:
  torch::Tensor drop_path(const torch::Tensor& branch) const;  // (B, Nq, D)
  BlockResult run_dropping_paths(const torch::Tensor& x, AttentionCall call,
                                 const BlockNorms& norms);
};
TORCH_MODULE(Block);

struct LogitsAndAttention {
  torch::Tensor logits;                  // (B,K)
  std::vector<torch::Tensor> attention;  // one (B,H,N,N) per layer, rows sum to 1
};

// What an analysis reads or changes while the blocks run: the model's one
// block loop (VisionTransformerImpl::forward_blocks) calls it around each
// block, so no analysis writes a loop of its own.
class BlockVisitor {
 public:
  virtual ~BlockVisitor() = default;
  // Before block `layer`: its attention call and skips, to change. They come
  // set to the explicit softmax with its probabilities (fp32, never a fused
  // kernel), nothing removed or skipped.
  virtual void before(int64_t /*layer*/, AttentionCall& /*call*/, BlockSkip& /*skip*/) {}
  // After it: what it returned. `result.out` may be replaced (patching); the
  // next block reads whatever is there.
  virtual void after(int64_t /*layer*/, BlockResult& /*result*/) {}
};

// How forward_blocks runs.
struct BlockPass {
  // The first block to run; the tokens given are the stream that enters it
  // (layer `first`).
  int64_t first = 0;
  // Analyses: called around each block, on the explicit path. nullptr: the
  // fast path, with the fused kernels between blocks.
  BlockVisitor* visitor = nullptr;
  // The last block computes only the rows the head reads: with pool "cls",
  // the class token alone (B,1,D), for about 3/4 less of its work. The fast
  // path only.
  bool head_rows_only = false;
};

// The model as timm writes it: forward_head(forward_features(images)).
class VisionTransformerImpl : public torch::nn::Module {
 public:
  explicit VisionTransformerImpl(const ModelConfig& cfg);
  // (B,C,S,S) -> (B,K): forward_head(forward_features(images)), the last
  // block computing only the rows the head reads: the same logits and
  // gradients as the full block.
  torch::Tensor forward(const torch::Tensor& images);
  // The embeddings and every block: (B,C,S,S) -> (B,N,D), before the final norm.
  torch::Tensor forward_features(const torch::Tensor& images, const BlockPass& pass = {});
  // The final norm, the pooling and the head: (B,N,D) -> (B,K)
  torch::Tensor forward_head(const torch::Tensor& tokens);
  // The logits and every layer's attention probabilities, in one explicit pass.
  LogitsAndAttention forward_with_attention(const torch::Tensor& images);
  const ModelConfig& config() const { return cfg_; }

  // The pieces of forward_features:
  torch::Tensor embed(const torch::Tensor& images);  // (B,C,S,S) -> (B,N,D): layer 0
  // The blocks from pass.first on: (B,N,D), the stream entering block
  // pass.first -> the stream after the last block.
  torch::Tensor forward_blocks(torch::Tensor tokens, const BlockPass& pass = {});
  torch::Tensor pool(const torch::Tensor& tokens);  // (B,N,D) -> (B,D): what the head reads

  PatchEmbed patch_embed{nullptr};
  torch::Tensor cls_token, pos_embed;  // (1,1,D), (1,N,D)
  torch::nn::Dropout pos_drop{nullptr};
  torch::nn::ModuleList blocks{nullptr};
  torch::nn::LayerNorm norm{nullptr};
  torch::nn::Linear head{nullptr};

 private:
  void init_weights();
  torch::Tensor run_fused_blocks(torch::Tensor x, const BlockPass& pass);
  torch::Tensor run_visited_blocks(torch::Tensor x, const BlockPass& pass);
  BlockImpl& block(int64_t index);
  ModelConfig cfg_;
};
TORCH_MODULE(VisionTransformer);

// Exact parameter count and forward FLOPs (multiply-adds, as in timm's tables) for a config,
// without building the model.
int64_t count_parameters(const ModelConfig& cfg);
int64_t forward_flops(const ModelConfig& cfg);

}  // namespace vit
