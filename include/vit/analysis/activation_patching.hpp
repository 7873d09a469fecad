#pragma once
// What causes one prediction (docs/analysis.md): activation patching (as ViT-Prisma
// and TransformerLens run it) and attribution patching (Nanda, 2023), its first-order
// estimate from one backward pass. For clean and corrupt images with labels c != k,
// m = logit_c - logit_k; one activation at a time is copied from the clean run into
// the corrupt one, with the effect (m_patched - m_corrupt) / (m_clean - m_corrupt):
// 0 is the corrupt run, 1 the clean one. Results are means over the pairs, for
// - the residual stream at every (layer, token): layer 0 is the embeddings, layer l
//   the stream after block l; every token, prefix tokens included;
// - every head's output in every block, before the output projection.
// Attribution estimates the same as (clean - corrupt activation) . dm/d(activation)
// on the corrupt run, summed over the features, divided by m_clean - m_corrupt.
// Shape key: n pairs, L blocks, T tokens, H heads, Dh head width, D width.
#include <cstdint>

#include <ATen/core/Tensor.h>

#include "vit/enum_names.hpp"
#include "vit/model/vision_transformer.hpp"

namespace vit {

enum class PatchMethod { kActivation, kAttribution, kBoth };
template <>
struct EnumNames<PatchMethod> {
  static constexpr std::pair<PatchMethod, const char*> table[] = {
      {PatchMethod::kActivation, "activation"},
      {PatchMethod::kAttribution, "attribution"},
      {PatchMethod::kBoth, "both"}};
};

struct PatchingResult {
  int64_t pairs = 0;                // the pairs averaged
  at::Tensor residual;              // double (L+1, T); undefined unless activation patching ran
  at::Tensor heads;                 // double (L, H)
  at::Tensor attribution_residual;  // double (L+1, T); undefined unless attribution ran
  at::Tensor attribution_heads;     // double (L, H)
};

// clean, corrupt: normalised images (n, C, S, S) on the model's device; labels int64
// (n), different in every pair. The model in eval mode, its weights untouched.
// Throws vit::Error for shapes that disagree, a pair with equal labels, or one whose
// clean and corrupt metrics are equal.
PatchingResult activation_patching(VisionTransformer& model, const at::Tensor& clean,
                                   const at::Tensor& corrupt, const at::Tensor& clean_labels,
                                   const at::Tensor& corrupt_labels, PatchMethod method);

// Pearson's r of two tensors' entries (same count, at least 2); NaN when either is
// constant.
double pearson_correlation(const at::Tensor& a, const at::Tensor& b);

}  // namespace vit
