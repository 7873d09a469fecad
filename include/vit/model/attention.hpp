#pragma once
// Shape key: B batch, N tokens, Nq query rows (N, or 1 for the class token
// alone), D model width, H heads, Dh head width, I = H * Dh attention inner width.
#include <utility>
#include <vector>

#include <torch/nn/module.h>
#include <torch/nn/modules/dropout.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/pimpl.h>

#include "vit/config.hpp"
#include "vit/model/residual.hpp"

namespace vit {

// Head ablation: one head's output replaced before the output projection, by
// `value` (broadcast to (B,Nq,Dh)), or zeros when that is undefined.
struct HeadRemoval {
  int64_t head = -1;  // -1: no head is removed
  torch::Tensor value;
};

// What an analysis asks of an attention layer.
struct AttentionCall {
  // Also return the probabilities (B,H,Nq,N), from an explicit fp32 softmax;
  // otherwise the fastest kernel runs.
  bool probabilities = false;
  bool head_outputs = false;  // also return the merged heads before `removal`
  HeadRemoval removal;
};

// The query rows a layer computes: every token's, or the class token's alone (all
// that the last block needs with pool "cls").
enum class QueryRows { kAll, kClassToken };

struct AttentionResult {
  torch::Tensor merged;  // (B,Nq,I): the heads side by side, as the output projection reads them
  torch::Tensor probabilities;  // (B,H,Nq,N) when asked for, rows sum to 1
  torch::Tensor heads;          // (B,Nq,I) when asked for: `merged` before the head removal
};

// Multi-head self-attention with a fused qkv projection. (B,N,D) -> (B,N,D)
class AttentionImpl : public torch::nn::Module {
 public:
  explicit AttentionImpl(const ModelConfig& cfg);
  // MSA(x) = project(softmax(q k^T / sqrt(Dh)) v): attend, then the output projection.
  torch::Tensor forward(const torch::Tensor& x);
  // The one attention function: the heads' outputs of `rows`, merged, with what
  // `call` asks for.
  AttentionResult attend(const torch::Tensor& x, const AttentionCall& call = {},
                         QueryRows rows = QueryRows::kAll);
  // proj_drop(proj(merged)) as a branch for Residual::operator+. (B,Nq,I) -> (B,Nq,D)
  Branch project(const torch::Tensor& merged);

  torch::nn::Linear qkv{nullptr}, proj{nullptr};
  torch::nn::Dropout attn_drop{nullptr}, proj_drop{nullptr};

 private:
  // (B,N,D) -> q, k, v each (B,H,N,Dh); q (B,H,1,Dh) for QueryRows::kClassToken
  std::vector<torch::Tensor> split_heads(const torch::Tensor& x, QueryRows rows);
  // softmax(q k^T / sqrt(Dh)) v of x's heads, merged, (B,Nq,I), by the fastest kernel
  torch::Tensor fused(const torch::Tensor& x, QueryRows rows);
  // The same, explicit, with the probabilities (B,H,Nq,N) computed in fp32 and
  // returned in `probs_dtype`
  std::pair<torch::Tensor, torch::Tensor> explicit_softmax(const torch::Tensor& q,
                                                           const torch::Tensor& k,
                                                           const torch::Tensor& v,
                                                           torch::ScalarType probs_dtype);
  torch::Tensor merge_heads(const torch::Tensor& x);  // (B,H,Nq,Dh) -> (B,Nq,I)
  // `merged` (B,Nq,I) with the removed head's Dh columns replaced
  torch::Tensor remove_head(const torch::Tensor& merged, const HeadRemoval& removal);
  int64_t heads_, head_dim_;
  double attn_dropout_;
};
TORCH_MODULE(Attention);

}  // namespace vit
