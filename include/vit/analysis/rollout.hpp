#pragma once
// Attention rollout (Abnar & Zuidema, 2020): how much each patch feeds the class
// token (or the patch tokens) once attention is followed through all layers.
// Shape key: L layers, B batch, H heads, N = F + g*g tokens: F prefix tokens (class
// token first, then registers; ModelConfig::prefix_tokens(), default 1), then the
// P = g*g patches in row-major order. Input everywhere: forward_with_attention's
// probabilities, one (B,H,N,N) tensor per layer.
#include <cstdint>
#include <string>
#include <vector>

#include <torch/types.h>

#include "vit/config.hpp"

namespace vit {

// Which row of the rollout matrix becomes the map.
enum class RolloutSource {
  kClassToken,  // R[0, F:]: for pool "cls", the class token is what the head reads
  kPatchMean,   // mean over rows F..N-1 of R[:, F:]: for pool "mean"
  // the patch rows weighted by the attention pool's query (its heads' mean): pool "map"
  kAttentionPool,
};
template <>
struct EnumNames<RolloutSource> {
  static constexpr std::pair<RolloutSource, const char*> table[] = {
      {RolloutSource::kClassToken, "class_token"},
      {RolloutSource::kPatchMean, "patch_mean"},
      {RolloutSource::kAttentionPool, "attention_pool"}};
};
// The row a model's head reads: the class token's for pool cls, the patch rows'
// mean for pool mean, the patch rows as its query weighs them for pool map.
RolloutSource rollout_source_of(Pool pool);

// The shape shared by every layer of an attention list.
struct AttentionShape {
  int64_t layers = 0, batch = 0, heads = 0, tokens = 0, grid = 0;
  int64_t prefix = 1;  // F, as given
};

// Weights w (B,1,N) with image b's map = w_b^T R_b: the class token's one-hot row,
// 1/P on every patch row, or the attention pool's probabilities over the patches
// (`pool_attention`, (B,H,1,P), heads averaged; needed for kAttentionPool alone);
// registers take no part. Shared with gradient rollout (saliency.hpp).
torch::Tensor rollout_source_weights(RolloutSource source, const AttentionShape& shape,
                                     const torch::TensorOptions& options,
                                     const torch::Tensor& pool_attention = {});

struct RolloutOptions {
  HeadFusion fusion = HeadFusion::kMean;  // how a layer's heads become one (B,N,N) matrix
  // In [0, 1). Per sample and layer, the floor(discard_ratio * P*P) smallest
  // patch-to-patch entries of the fused matrix become zero (ties: the earlier in
  // row-major order first); prefix rows and columns are never touched.
  double discard_ratio = 0.0;
  RolloutSource source = RolloutSource::kClassToken;
  int64_t prefix_tokens = 1;     // F: the class token and the registers
  torch::Tensor pool_attention;  // (B,H,1,P): the attention pool's, for kAttentionPool
};

// The full rollout R = M_L ... M_1, M_l = rownorm(fuse(A_l) + I): (B,N,N), float64 for
// float64 input, else float32, on the input's device. Throws vit::Error (as does
// rollout_masks) for shapes check_attention_shapes rejects, a discard ratio outside
// [0, 1), or a fused layer with a negative or non-finite entry.
torch::Tensor rollout_matrix(const std::vector<torch::Tensor>& attentions,
                             const RolloutOptions& options = {});

// One map per image, divided by its own maximum: (B,g,g) in [0, 1]; all zeros when
// no entry is positive (e.g. identity attention with the class-token source).
torch::Tensor rollout_masks(const std::vector<torch::Tensor>& attentions,
                            const RolloutOptions& options = {});

// The maps of an already computed rollout matrix (B,N,N) -> (B,g,g).
torch::Tensor rollout_masks_from_matrix(const torch::Tensor& rollout, RolloutSource source,
                                        int64_t prefix_tokens = 1,
                                        const torch::Tensor& pool_attention = {});

// Throws vit::Error (message starting with `where`) unless the list is non-empty
// (B,H,N,N) floating-point tensors of one shape, dtype and device, B, H >= 1, and
// N - F a perfect square.
AttentionShape check_attention_shapes(const std::vector<torch::Tensor>& attentions,
                                      const std::string& where, int64_t prefix_tokens = 1);

// Throws vit::Error naming the first tensor with a negative or non-finite entry.
void check_attention_values(const std::vector<torch::Tensor>& attentions, const std::string& where);

}  // namespace vit
