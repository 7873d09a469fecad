#pragma once
// Attention rollout (Abnar & Zuidema, 2020): how much each patch feeds the
// class token (or the patch tokens) once attention is followed through all layers.
//
// Shape key:  L layers, B batch, H heads, N = F + g*g tokens: F prefix tokens
//             (token 0 is the class token, then the model's registers), then the
//             patches in row-major grid order, P = g*g patches. F is
//             ModelConfig::prefix_tokens(); the functions take it (default 1, a
//             class token alone).
//
// Input everywhere: the per-layer attention probabilities of
// VisionTransformer::forward_with_attention, one (B,H,N,N) tensor per layer.
#include <cstdint>
#include <string>
#include <vector>

#include <torch/types.h>

#include "vit/config.hpp"

namespace vit {

// How one layer's heads become one (B,N,N) matrix: HeadFusion, in config.hpp.

// Which row of the rollout matrix becomes the map.
enum class RolloutSource {
  kClassToken,  // R[0, F:]: for pool "cls", the class token is what the head reads
  kPatchMean,   // mean over rows F..N-1 of R[:, F:]: for pool "mean"
};
template <>
struct EnumNames<RolloutSource> {
  static constexpr std::pair<RolloutSource, const char*> table[] = {
      {RolloutSource::kClassToken, "class_token"}, {RolloutSource::kPatchMean, "patch_mean"}};
};
// The row a model's head reads: the class token's for pool cls, the patch
// rows' mean for pool mean and map (a mean-pooled head reads every patch
// token; an attention pool reads them all too, through its own query).
RolloutSource rollout_source_of(Pool pool);

// Weights w (N) with map = w^T R: the class token's one-hot row, or 1/P on
// every patch row (their mean; the registers take no part). Shared with
// gradient rollout (saliency.hpp).
torch::Tensor rollout_source_weights(RolloutSource source, int64_t tokens,
                                     const torch::TensorOptions& options,
                                     int64_t prefix_tokens = 1);

struct RolloutOptions {
  HeadFusion fusion = HeadFusion::kMean;
  // Per sample and layer, the k = floor(discard_ratio * P*P) smallest patch-to-patch
  // entries (rows and columns F..N-1) of the fused matrix are set to zero; the class
  // token's and the registers' rows and columns are never touched. Ties go by position: among equal
  // values the earlier entry in row-major order is dropped first. In [0, 1).
  double discard_ratio = 0.0;
  RolloutSource source = RolloutSource::kClassToken;
  int64_t prefix_tokens = 1;  // F: the class token and the registers
};

// The full rollout R = M_L ... M_1 with M_l = rownorm(fuse(A_l) + I), where rownorm
// divides every row by its own sum. (B,N,N); float64 for float64 input, else float32,
// on the input's device. Throws vit::Error for shapes check_attention_shapes rejects,
// a discard ratio outside [0, 1), or a fused layer with a negative or non-finite entry
// (the same for rollout_masks).
torch::Tensor rollout_matrix(const std::vector<torch::Tensor>& attentions,
                             const RolloutOptions& options = {});

// One map per image, each divided by its own maximum: (B,g,g), values in [0, 1].
// A map with no positive entry (e.g. identity attention with the class-token
// source) is all zeros. Computes only the needed row of R, never the full product.
torch::Tensor rollout_masks(const std::vector<torch::Tensor>& attentions,
                            const RolloutOptions& options = {});

// The maps of an already computed rollout matrix (B,N,N) -> (B,g,g).
torch::Tensor rollout_masks_from_matrix(const torch::Tensor& rollout, RolloutSource source,
                                        int64_t prefix_tokens = 1);

// The shape shared by every layer of an attention list.
struct AttentionShape {
  int64_t layers = 0, batch = 0, heads = 0, tokens = 0, grid = 0;
  int64_t prefix = 1;  // F, as given
};

// Checks the shapes every analysis needs, throwing vit::Error: a non-empty list of
// (B,H,N,N) floating-point tensors of one shape, dtype and device, B, H >= 1, and
// N - F a perfect square. `where` starts each message.
AttentionShape check_attention_shapes(const std::vector<torch::Tensor>& attentions,
                                      const std::string& where, int64_t prefix_tokens = 1);

// Throws vit::Error naming the first tensor with a negative or non-finite entry. One
// pass over each tensor and a single device sync for the list.
void check_attention_values(const std::vector<torch::Tensor>& attentions, const std::string& where);

}  // namespace vit
