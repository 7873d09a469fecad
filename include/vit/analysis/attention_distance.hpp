#pragma once
// Mean attention distance (ViT paper, Fig. 7 right): for each layer and head, how
// far in pixels a patch looks, on average, weighted by its attention.
// Shape key: L layers, B batch, H heads, N = F + g*g tokens (F prefix tokens, then
// the patches in row-major order), P = g*g patches.
// For one image, layer and head with attention A (N,N):
//   W = A[F:, F:]   prefix rows and columns dropped, not renormalised (as the ViT
//                   authors' code); `renormalize` divides each row by its sum
//   distance = mean over queries q of sum_k W[q,k] * D[q,k]
// A query row without patch attention contributes 0, also when renormalising.
#include <cstdint>
#include <vector>

#include <torch/types.h>

namespace vit {

// D[q,k] = patch_size * Euclidean distance between the grid cells of patches q and
// k, (P,P). Throws vit::Error unless grid >= 1 and patch_size >= 1.
torch::Tensor patch_distance_matrix(int64_t grid, int64_t patch_size,
                                    const torch::TensorOptions& options = torch::kFloat);

// Pixels per image, layer and head: (B,L,H), float64 for float64 input, else float32,
// on the input's device. Throws vit::Error for bad shapes (check_attention_shapes),
// patch_size < 1, or a negative or non-finite entry.
torch::Tensor mean_attention_distance(const std::vector<torch::Tensor>& attentions,
                                      int64_t patch_size, bool renormalize = false,
                                      int64_t prefix_tokens = 1);

// (B,L,H) -> (L,H).
torch::Tensor average_over_images(const torch::Tensor& per_image);

// Running mean over many batches, e.g. 128 images fed 32 at a time.
class AttentionDistanceAccumulator {
 public:
  explicit AttentionDistanceAccumulator(int64_t patch_size, bool renormalize = false,
                                        int64_t prefix_tokens = 1);

  // Layers, heads and grid must match earlier batches.
  void add(const std::vector<torch::Tensor>& attentions);
  // (L,H) float64 on the CPU; throws vit::Error before the first add.
  torch::Tensor mean() const;

  int64_t images() const { return images_; }
  int64_t grid() const { return grid_; }  // 0 before the first add
  int64_t patch_size() const { return patch_size_; }
  bool renormalize() const { return renormalize_; }

 private:
  int64_t patch_size_;
  bool renormalize_;
  int64_t prefix_tokens_;
  torch::Tensor sum_;  // (L,H) float64 on the CPU: the sum over images
  int64_t images_ = 0;
  int64_t grid_ = 0;
};

}  // namespace vit
