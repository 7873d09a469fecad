#include "vit/analysis/attention_distance.hpp"

#include <sstream>

#include <torch/torch.h>

#include "vit/analysis/rollout.hpp"
#include "vit/error.hpp"

namespace vit {
namespace {

constexpr const char* kAttentionDistanceWhere = "attention distance";

void check_patch_size(int64_t patch_size) {
  if (patch_size < 1) {
    throw Error(std::string(kAttentionDistanceWhere) + ": patch size " +
                std::to_string(patch_size) + " is not positive");
  }
}

// One layer (B,H,N,N) -> (B,H). `padded` is D with zero rows and columns for
// the F prefix tokens (N,N): full attention rows then weight the prefix's
// columns by 0 and its query rows add 0, so the input is used as it is,
// without slicing out W.
torch::Tensor layer_distance(const torch::Tensor& attention, const torch::Tensor& padded,
                             bool renormalize, int64_t prefix) {
  const int64_t batch = attention.size(0), heads = attention.size(1), tokens = attention.size(2);
  const auto patches = static_cast<double>(tokens - prefix);
  const auto a = attention.to(padded.scalar_type());  // no copy for float32 input
  if (!renormalize) {
    // The sum over queries and keys of A * D' for every (image, head) is one
    // matrix-vector product: a single read of the attention, no temporaries.
    const auto total = torch::mv(a.reshape({batch * heads, tokens * tokens}), padded.view({-1}));
    return (total / patches).view({batch, heads});  // (B, H)
  }
  const auto per_query = (a * padded).sum(/*dim=*/-1);                        // (B, H, N)
  const auto row_sum = a.slice(/*dim=*/3, /*start=*/prefix).sum(/*dim=*/-1);  // (B, H, N)
  // The class token and the registers have no place on the grid.
  const auto patch_rows = [&](const torch::Tensor& t) {
    return t.slice(/*dim=*/2, /*start=*/prefix);
  };
  // A query that attends only to the prefix has no patch distribution; it
  // contributes 0 rather than 0/0.
  const auto safe_sum = torch::where(row_sum > 0, row_sum, torch::ones_like(row_sum));
  return patch_rows(per_query / safe_sum).mean(/*dim=*/-1);  // (B, H)
}

}  // namespace

torch::Tensor patch_distance_matrix(int64_t grid, int64_t patch_size,
                                    const torch::TensorOptions& options) {
  if (grid < 1) {
    throw Error(std::string(kAttentionDistanceWhere) + ": grid side " + std::to_string(grid) +
                " is not positive");
  }
  check_patch_size(patch_size);
  const auto index = torch::arange(grid * grid, torch::kLong);
  const auto row = index.div(grid, /*rounding_mode=*/"floor").to(torch::kDouble);  // (P)
  const auto col = index.remainder(grid).to(torch::kDouble);                       // (P)
  const auto dr = row.unsqueeze(1) - row.unsqueeze(0);                             // (P, P)
  const auto dc = col.unsqueeze(1) - col.unsqueeze(0);                             // (P, P)
  return (torch::sqrt(dr * dr + dc * dc) * static_cast<double>(patch_size)).to(options);
}

namespace {

// (B,L,H) for attentions already checked to have `shape`.
torch::Tensor checked_distances(const std::vector<torch::Tensor>& attentions,
                                const AttentionShape& shape, int64_t patch_size, bool renormalize) {
  const auto& first = attentions.front();
  const auto dtype = first.scalar_type() == torch::kDouble ? torch::kDouble : torch::kFloat;
  auto padded = torch::zeros({shape.tokens, shape.tokens},
                             torch::dtype(dtype).device(first.device()));  // (N, N)
  padded.slice(/*dim=*/0, /*start=*/shape.prefix)
      .slice(/*dim=*/1, /*start=*/shape.prefix)
      .copy_(patch_distance_matrix(shape.grid, patch_size, padded.options()));
  std::vector<torch::Tensor> layers;
  layers.reserve(attentions.size());
  for (const auto& attention : attentions) {
    layers.push_back(layer_distance(attention, padded, renormalize, shape.prefix));
  }
  return torch::stack(layers, /*dim=*/1);  // (B, L, H)
}

}  // namespace

torch::Tensor mean_attention_distance(const std::vector<torch::Tensor>& attentions,
                                      int64_t patch_size, bool renormalize, int64_t prefix_tokens) {
  const auto shape = check_attention_shapes(attentions, kAttentionDistanceWhere, prefix_tokens);
  check_attention_values(attentions, kAttentionDistanceWhere);
  check_patch_size(patch_size);
  return checked_distances(attentions, shape, patch_size, renormalize);
}

torch::Tensor average_over_images(const torch::Tensor& per_image) {
  if (!per_image.defined() || per_image.dim() != 3 || per_image.size(0) < 1) {
    std::ostringstream shape;
    if (per_image.defined()) shape << per_image.sizes();
    throw Error(std::string(kAttentionDistanceWhere) + ": per-image distances have shape " +
                (per_image.defined() ? shape.str() : "undefined") +
                "; expected (B,L,H) with B >= 1");
  }
  return per_image.mean(/*dim=*/0);  // (L, H)
}

AttentionDistanceAccumulator::AttentionDistanceAccumulator(int64_t patch_size, bool renormalize,
                                                           int64_t prefix_tokens)
    : patch_size_(patch_size), renormalize_(renormalize), prefix_tokens_(prefix_tokens) {
  check_patch_size(patch_size);
}

void AttentionDistanceAccumulator::add(const std::vector<torch::Tensor>& attentions) {
  const auto shape = check_attention_shapes(attentions, kAttentionDistanceWhere, prefix_tokens_);
  if (images_ > 0 &&
      (shape.layers != sum_.size(0) || shape.heads != sum_.size(1) || shape.grid != grid_)) {
    const auto layout = [](int64_t layers, int64_t heads, int64_t grid) {
      return std::to_string(layers) + " layers x " + std::to_string(heads) + " heads on a " +
             std::to_string(grid) + "x" + std::to_string(grid) + " grid";
    };
    throw Error(std::string(kAttentionDistanceWhere) + ": batch has " +
                layout(shape.layers, shape.heads, shape.grid) + " but earlier batches had " +
                layout(sum_.size(0), sum_.size(1), grid_) +
                "; all batches must come from one model");
  }
  check_attention_values(attentions, kAttentionDistanceWhere);
  // Summed in float64 so thousands of images do not drift.
  const auto batch_sum = checked_distances(attentions, shape, patch_size_, renormalize_)
                             .to(torch::kCPU, torch::kDouble)
                             .sum(/*dim=*/0);  // (L, H)
  sum_ = images_ == 0 ? batch_sum : sum_ + batch_sum;
  images_ += shape.batch;
  grid_ = shape.grid;
}

torch::Tensor AttentionDistanceAccumulator::mean() const {
  if (images_ == 0) {
    throw Error(std::string(kAttentionDistanceWhere) +
                ": no images added yet; call add() before mean()");
  }
  return sum_ / static_cast<double>(images_);
}

}  // namespace vit
