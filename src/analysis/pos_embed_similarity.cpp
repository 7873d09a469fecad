// Shape key: g grid side, P = g*g patches, D width.
#include "vit/analysis/pos_embed_similarity.hpp"

#include <torch/torch.h>

#include "vit/weights/pos_embed_resize.hpp"

namespace vit {

at::Tensor pos_embed_similarity(const at::Tensor& pos_embed, int64_t prefix_rows) {
  pos_embed_grid(pos_embed, prefix_rows);  // checks the shape
  const auto dtype = pos_embed.scalar_type() == at::kDouble ? at::kDouble : at::kFloat;
  const auto patches = pos_embed.detach()
                           .to(torch::kCPU, dtype)
                           .slice(/*dim=*/1, /*start=*/prefix_rows)  // (1, P, D)
                           .squeeze(0);                              // (P, D)
  // Norms clamped as torch.nn.functional.normalize does: a zero row stays zero.
  const auto unit = patches / patches.norm(2, /*dim=*/1, /*keepdim=*/true).clamp_min(1e-12);
  return unit.matmul(unit.t());  // (P, P)
}

}  // namespace vit
