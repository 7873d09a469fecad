#pragma once
// The logit lens for a ViT: every layer's residual stream read out exactly as
// the model reads its last one (the final norm, the pooling and the head), and
// the norms of the patch tokens layer by layer, whose outliers are the
// "high-norm tokens" of Darcet et al. (2024), "Vision Transformers Need Registers".
//
// Shape key: L layers, n images, N tokens, F prefix tokens (the class token and
// R registers), P = N - F patches, D width, K classes.
#include <cstdint>
#include <vector>

#include <ATen/core/Tensor.h>

#include "vit/analysis/image_batches.hpp"
#include "vit/analysis/residual_stream.hpp"

namespace vit {

// The q-quantile of `values` (any shape, read flat), with linear
// interpolation between the two nearest ranks (numpy's default). q in [0, 1].
// Throws vit::Error for no values or q outside [0, 1].
double linear_quantile(const at::Tensor& values, double q);

// The L2 norms of the patch tokens of one layer (B,N,D) -> (B*P), the class
// token and the registers (F prefix tokens in all) left out.
at::Tensor patch_token_norms(const at::Tensor& layer, int64_t prefix_tokens = 1);

// The L2 norms of the R registers of one layer (B,N,D) -> (B*R): tokens
// first..first+R-1, after the class token (first = 1), or with no class
// token (first = 0), as timm's *_reg*_gap_* models have them.
at::Tensor register_token_norms(const at::Tensor& layer, int64_t registers, int64_t first = 1);

struct TokenNormSummary {
  std::vector<double> median, p99, max;  // one per layer
  // Per layer, tokens above 4x the median of the layer's patch-token norms.
  std::vector<int64_t> high;
};

struct LensResult {
  at::Tensor logits;                // float (L+1, n, K), on the CPU
  std::vector<double> accuracy;     // per layer; empty without labels
  std::vector<double> agreement;    // per layer: top-1 equal to the last layer's
  TokenNormSummary norms;           // the patch tokens'
  TokenNormSummary register_norms;  // the registers'; empty for a model without
};

// Each layer's logits (B,K) of one stream: the final norm and the head on every layer
// (stream_logits).
std::vector<at::Tensor> lens_logits(VisionTransformer& model, const ResidualStream& stream);

// The lens over every image of `images`; `labels` int64 (n) gives the
// accuracy, or is undefined (then `accuracy` stays empty). Without gradients.
LensResult logit_lens(VisionTransformer& model, const ImageBatches& images,
                      const at::Tensor& labels = {});

}  // namespace vit
