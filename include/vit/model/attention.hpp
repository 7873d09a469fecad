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

// Analyses (head ablation): one head's output replaced before the output
// projection, by `value` (broadcast to (B,Nq,Dh)) or by zeros when that is
// undefined.
struct HeadRemoval {
  int64_t head = -1;  // -1: no head is removed
  torch::Tensor value;
};

// What an analysis asks of an attention layer.
struct AttentionCall {
  // Also return the probabilities (B,H,Nq,N), from an explicit softmax in
  // fp32; otherwise the fastest kernel runs.
  bool probabilities = false;
  // Also return the merged heads as computed, before `removal`.
  bool head_outputs = false;
  HeadRemoval removal;
};

// The query rows a layer computes, the model's own speed choice: every
// token's, or the class token's alone (with pool "cls" the last block needs
// nothing else, for about 3/4 less of its work).
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
  // The heads' outputs of `rows`, merged, with what `call` asks for: the one
  // attention function.
  AttentionResult attend(const torch::Tensor& x, const AttentionCall& call = {},
                         QueryRows rows = QueryRows::kAll);
  // The output projection, proj_drop(proj(merged)), as a branch that the
  // residual add applies (Residual::operator+). (B,Nq,I) -> (B,Nq,D)
  Branch project(const torch::Tensor& merged);

  torch::nn::Linear qkv{nullptr}, proj{nullptr};
  torch::nn::Dropout attn_drop{nullptr}, proj_drop{nullptr};

 private:
  // (B,N,D) -> q, k, v each (B,H,N,Dh); q (B,H,1,Dh) of the class token alone
  // for QueryRows::kClassToken
  std::vector<torch::Tensor> split_heads(const torch::Tensor& x, QueryRows rows);
  // softmax(q k^T / sqrt(Dh)) v of x's heads, merged, (B,Nq,I): straight from
  // the qkv projection on CPUs with AMX (kernels/attention_from_projection), SDPA's fused
  // kernels on GPUs (LibTorch >= 2.0), the explicit softmax elsewhere
  torch::Tensor fused(const torch::Tensor& x, QueryRows rows);
  // The same, explicit, with the probabilities (B,H,Nq,N), computed in fp32
  // and returned in `probs_dtype` (fp32, or bf16 to feed a bf16 product)
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
