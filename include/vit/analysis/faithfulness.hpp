#pragma once
// Which saliency map is right: the deletion and insertion test (Petsiuk, Das &
// Saenko, 2018, "RISE"; docs/analysis.md). Patches ranked by a method's map are
// deleted most salient first (a good map drops the class's probability fast: a low
// deletion AUC), or put back into an empty image in that order (a high insertion
// AUC). A removed patch is 0 in normalised space: the dataset's mean colour.
// "random" is a seeded order: the floor any method must beat.
// Shape key: B batch, C channels, S image side, g grid side, P = g*g patches,
// p patch side, T = ceil(P / step) steps.
#include <cstdint>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

#include "vit/analysis/rollout.hpp"
#include "vit/model/vision_transformer.hpp"

namespace vit {

enum class FaithfulnessMethod {
  kRollout,
  kGrad,
  kGradXInput,
  kGradRollout,
  kIntegratedGradients,  // with GradientAveraging's defaults: 32 steps from the mean image
  kSmoothGrad,           // with GradientAveraging's defaults: 25 copies at 0.15, seed 0
  kRandom
};

// In the order the files list them.
const std::vector<FaithfulnessMethod>& faithfulness_methods();
std::string faithfulness_method_name(FaithfulnessMethod method);

// |map| of a pixel map (B, S, S) summed over each patch of side `patch` -> (B, g, g).
at::Tensor patch_sums(const at::Tensor& pixel_map, int64_t patch);

// Each image's patches ranked by score, most salient first: (B, g, g) or
// (B, P) -> int64 (B, P). Ties keep the row-major order (a stable sort).
at::Tensor salience_order(const at::Tensor& scores);

// A random order of P patches for each of `batch` images: int64 (B, P), from `seed`
// and the images' position `first` (the same for an image whatever the batching).
at::Tensor random_order(int64_t batch, int64_t patches, uint64_t seed, int64_t first);

// The patch scores (B, g, g) of a map method (not kRandom) for normalised `inputs`
// (B, C, S, S), explaining `classes` int64 (B).
at::Tensor method_scores(VisionTransformer& model, const at::Tensor& inputs,
                         const at::Tensor& classes, FaithfulnessMethod method,
                         const RolloutOptions& rollout);

// How many patches are out after each step s = 0..T: min(s * step, P).
std::vector<int64_t> removed_counts(int64_t patches, int64_t step);

struct FaithfulnessCurves {
  at::Tensor deletion;   // float64 (B, T+1): the explained class's probability after each step
  at::Tensor insertion;  // float64 (B, T+1)
};

// The curves of normalised `inputs` (B, C, S, S) for `classes` (B) and the patch
// `order` (B, P), without gradients. Throws vit::Error for step < 1 or > P, or an
// order that does not match.
FaithfulnessCurves deletion_insertion(VisionTransformer& model, const at::Tensor& inputs,
                                      const at::Tensor& classes, const at::Tensor& order,
                                      int64_t step);

// The trapezoid area under `curve` (T+1 values) over the fraction of patches
// removed (or inserted): in [0, 1] for probabilities.
double curve_area(const std::vector<double>& curve, int64_t patches, int64_t step);

}  // namespace vit
