#pragma once
// Shape key: B batch, N tokens, D model width, K the width a branch's last
// linear layer reads.
// The residual stream, so that a block reads as the paper writes it,
//   h = x + attn(norm1(x));  out = h + mlp(norm2(h)),
// while the adds and norms run fused: an add, with its branch's last linear layer,
// is evaluated when the stream is first read. Reading evaluates, so the reads are
// not const; a copy evaluates on its own.
#include <optional>

#include <torch/nn/modules/dropout.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/normalization.h>

namespace vit {

// drop(layer(input)), not yet computed: a branch whose last layer the add applies.
struct Branch {
  torch::nn::Linear layer;
  torch::nn::Dropout drop;
  torch::Tensor input;  // (B,N,K)
  // drop(layer(input)) computed now, apart from any add. (B,N,D)
  torch::Tensor applied() const;
};

class Residual {
 public:
  Residual() = default;
  explicit Residual(torch::Tensor x);

  // The stream (B,N,D), computing a pending add.
  const torch::Tensor& tensor();
  // norm(stream) as a linear layer reads it (bf16 under CPU bf16 autocast); kept
  // from the last call for the same norm.
  torch::Tensor normalized(const torch::nn::LayerNorm& norm);
  // The class token's row (B,1,D), for a block that computes it alone.
  Residual class_token();

  // The stream plus the branch, evaluated when first read.
  Residual operator+(const Branch& branch);
  // The stream plus a branch computed apart (stochastic depth scales it first).
  Residual operator+(const torch::Tensor& branch);

 private:
  torch::Tensor x_;                // the stream, or the left side of the pending add
  std::optional<Branch> pending_;  // x_ + pending_, not yet computed
  torch::Tensor normalized_;       // normalized_by_(x_), once asked for
  const torch::nn::LayerNormImpl* normalized_by_ = nullptr;
};

}  // namespace vit
