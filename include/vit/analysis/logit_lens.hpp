#pragma once
// The logit lens for a ViT: every layer's residual stream read out as the model
// reads its last one, and the patch tokens' norms layer by layer, whose outliers
// are the "high-norm tokens" of Darcet et al. (2024).
// Shape key: L layers, n images, N tokens, F prefix tokens (the class token and
// R registers), P = N - F patches, D width, K classes.
#include <cstdint>
#include <vector>

#include <ATen/core/Tensor.h>

#include "vit/analysis/image_batches.hpp"
#include "vit/analysis/residual_stream.hpp"

namespace vit {

// The q-quantile of `values` (read flat), interpolated linearly as numpy's default.
// Throws vit::Error for no values or q outside [0, 1].
double linear_quantile(const at::Tensor& values, double q);

// The L2 norms of one layer's patch tokens: (B,N,D) -> (B*P).
at::Tensor patch_token_norms(const at::Tensor& layer, int64_t prefix_tokens = 1);

// The L2 norms of one layer's R registers, tokens first..first+R-1 (first = 0
// without a class token): (B,N,D) -> (B*R).
at::Tensor register_token_norms(const at::Tensor& layer, int64_t registers, int64_t first = 1);

struct TokenNormSummary {
  std::vector<double> median, p99, max;  // one per layer
  // Per layer, tokens above 4x the median of the layer's patch-token norms.
  std::vector<int64_t> high;
};

// A backbone without a head (num_classes 0) gets the norms alone.
struct LensResult {
  at::Tensor logits;                // float (L+1, n, K), on the CPU
  std::vector<double> accuracy;     // per layer; empty without labels
  std::vector<double> agreement;    // per layer: top-1 equal to the last layer's
  TokenNormSummary norms;           // the patch tokens'
  TokenNormSummary register_norms;  // the registers'; empty for a model without
};

// Each layer's logits (B,K) of one stream (stream_logits).
std::vector<at::Tensor> lens_logits(VisionTransformer& model, const ResidualStream& stream);

// Over every image; `labels` int64 (n), when defined, gives the accuracy.
LensResult logit_lens(VisionTransformer& model, const ImageBatches& images,
                      const at::Tensor& labels = {});

}  // namespace vit
