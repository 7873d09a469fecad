#include "vit/analysis/rollout.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>

#include <torch/torch.h>

#include "vit/error.hpp"

namespace vit {
namespace {

constexpr const char* kRolloutWhere = "attention rollout";

std::string shape_text(const torch::Tensor& t) {
  std::ostringstream out;
  out << t.sizes();
  return out.str();
}

// float64 stays float64; bf16/fp16/fp32 are all computed in float32.
torch::ScalarType compute_dtype(const torch::Tensor& t) {
  return t.scalar_type() == torch::kDouble ? torch::kDouble : torch::kFloat;
}

int64_t exact_sqrt(int64_t n) {
  const auto root = static_cast<int64_t>(std::llround(std::sqrt(static_cast<double>(n))));
  return root * root == n ? root : -1;
}

// (B,H,N,N) -> (B,N,N) in the compute dtype; always a fresh tensor, so callers may
// edit it in place.
torch::Tensor fuse_heads(const torch::Tensor& attention, HeadFusion fusion) {
  const auto dtype = compute_dtype(attention);
  switch (fusion) {
    case HeadFusion::kMax:
      return attention.amax(/*dim=*/1).to(dtype);
    case HeadFusion::kMin:
      return attention.amin(/*dim=*/1).to(dtype);
    case HeadFusion::kMean:
      break;
  }
  // Accumulate in the compute dtype rather than converting the whole input first.
  return at::mean(attention, /*dim=*/{1}, /*keepdim=*/false, dtype);
}

// Zeroes, per sample, the k smallest patch-to-patch entries of fused (B,N,N).
void discard_weakest(torch::Tensor& fused, double ratio, int64_t prefix) {
  const int64_t batch = fused.size(0);
  const int64_t patches = fused.size(1) - prefix;
  const int64_t entries = patches * patches;
  // The slack keeps ratios like 0.29 * 100 = 28.999999999999996 at 29.
  const auto k = std::min(entries, static_cast<int64_t>(std::floor(ratio * entries + 1e-9)));
  if (k <= 0) return;
  auto block = fused.slice(/*dim=*/1, /*start=*/prefix).slice(/*dim=*/2, /*start=*/prefix);
  auto flat = block.reshape({batch, entries});  // (B, P*P), a copy: block is strided
  // Selection instead of a sort (it orders nothing but the k-th): everything below
  // the k-th smallest value goes, plus as many of the entries equal to it, first in
  // row-major order, as are needed to make k.
  const auto kth = std::get<0>(flat.kthvalue(k, /*dim=*/1, /*keepdim=*/true));  // (B, 1)
  const auto below = flat < kth;
  const auto tied = flat == kth;
  const auto ties_needed = k - below.sum(/*dim=*/1, /*keepdim=*/true);  // (B, 1), >= 1
  const auto first_ties = tied.logical_and(tied.cumsum(/*dim=*/1) <= ties_needed);
  flat.masked_fill_(below.logical_or(first_ties), /*value=*/0.0);
  block.copy_(flat.view({batch, patches, patches}));  // (B, P, P)
}

// A 0-dim bool on t's device: no negative and no non-finite entry. Kept on the device
// so that a whole list is checked with one sync.
torch::Tensor all_valid(const torch::Tensor& t) {
  const auto [low, high] = torch::aminmax(t);  // one pass
  // low is NaN when any entry is, and NaN >= 0 is false.
  return torch::logical_and(low >= 0, torch::isfinite(high));
}

void throw_on_invalid(const std::vector<torch::Tensor>& flags, const std::string& where) {
  const auto ok = torch::stack(flags).cpu();  // (L)
  for (int64_t l = 0; l < ok.size(0); ++l) {
    if (!ok[l].item<bool>()) {
      throw Error(where + ": attentions[" + std::to_string(l) +
                  "] has negative or non-finite entries; expected attention probabilities");
    }
  }
}

// M_l = rownorm(fuse(A_l) + I), (B,N,N). Only the fused matrix must be valid: that is
// what keeps every row sum >= 1 (a negative entry that max fusion hides is harmless),
// and it is H times smaller than the input. Its flag goes to `flags`.
torch::Tensor layer_matrix(const torch::Tensor& attention, const RolloutOptions& options,
                           std::vector<torch::Tensor>& flags) {
  auto fused = fuse_heads(attention, options.fusion);
  flags.push_back(all_valid(fused));
  discard_weakest(fused, options.discard_ratio, options.prefix_tokens);
  fused.diagonal(/*offset=*/0, /*dim1=*/1, /*dim2=*/2).add_(1.0);
  // Each row by its own sum (keepdim).
  return fused / fused.sum(/*dim=*/-1, /*keepdim=*/true);
}

void check_options(const RolloutOptions& options) {
  if (!(options.discard_ratio >= 0.0 && options.discard_ratio < 1.0)) {
    std::ostringstream ratio;
    ratio << options.discard_ratio;
    throw Error(std::string(kRolloutWhere) + ": discard ratio " + ratio.str() +
                " is outside [0, 1)");
  }
}

// rows (B,N) -> (B,g,g): the patch part, each map divided by its own maximum.
torch::Tensor normalize_maps(const torch::Tensor& rows, const AttentionShape& shape) {
  const int64_t grid = shape.grid;
  const auto maps = rows.slice(/*dim=*/1, /*start=*/shape.prefix);  // (B, P)
  const auto peak = maps.amax(/*dim=*/1, /*keepdim=*/true);
  // A map without a positive entry stays zero instead of becoming 0/0.
  const auto safe_peak = torch::where(peak > 0, peak, torch::ones_like(peak));
  return (maps / safe_peak).view({rows.size(0), grid, grid});  // (B, g, g)
}

}  // namespace

RolloutSource rollout_source_of(Pool pool) {
  switch (pool) {
    case Pool::kMean:
      return RolloutSource::kPatchMean;
    case Pool::kMap:
      return RolloutSource::kAttentionPool;
    case Pool::kCls:
      break;
  }
  return RolloutSource::kClassToken;
}

torch::Tensor rollout_source_weights(RolloutSource source, const AttentionShape& shape,
                                     const torch::TensorOptions& options,
                                     const torch::Tensor& pool_attention) {
  const int64_t patches = shape.tokens - shape.prefix;
  if (source == RolloutSource::kAttentionPool) {
    const std::vector<int64_t> expected = {
        shape.batch, pool_attention.defined() ? pool_attention.size(1) : 1, 1, patches};
    if (!pool_attention.defined() || pool_attention.sizes() != expected)
      throw Error(std::string(kRolloutWhere) +
                  ": the attention pool's source needs its probabilities, (B,H,1,P) with B = " +
                  std::to_string(shape.batch) + " and P = " + std::to_string(patches) + ", got " +
                  (pool_attention.defined() ? shape_text(pool_attention) : "none"));
    auto weights = torch::zeros({shape.batch, 1, shape.tokens}, options);
    weights.slice(/*dim=*/2, /*start=*/shape.prefix)
        .copy_(pool_attention.to(options.dtype()).mean(/*dim=*/1));  // (B, 1, P)
    return weights;
  }
  auto weights = torch::zeros({shape.tokens}, options);
  if (source == RolloutSource::kClassToken)
    weights[0] = 1.0;
  else
    weights.slice(/*dim=*/0, /*start=*/shape.prefix).fill_(1.0 / static_cast<double>(patches));
  return weights.expand({shape.batch, 1, shape.tokens});
}

AttentionShape check_attention_shapes(const std::vector<torch::Tensor>& attentions,
                                      const std::string& where, int64_t prefix_tokens) {
  if (attentions.empty()) {
    throw Error(where + ": no attention layers given; expected one (B,H,N,N) tensor per layer");
  }
  for (size_t l = 0; l < attentions.size(); ++l) {
    const auto& a = attentions[l];
    const std::string name = where + ": attentions[" + std::to_string(l) + "]";
    if (!a.defined()) throw Error(name + " is an undefined tensor");
    if (a.dim() != 4 || a.size(2) != a.size(3)) {
      throw Error(name + " has shape " + shape_text(a) + "; expected (B,H,N,N)");
    }
    if (!a.is_floating_point()) {
      throw Error(name + " has dtype " + std::string(c10::toString(a.scalar_type())) +
                  "; expected a floating-point type");
    }
    const auto& first = attentions.front();
    if (l > 0 && (a.sizes() != first.sizes() || a.scalar_type() != first.scalar_type() ||
                  a.device() != first.device())) {
      const auto describe = [](const torch::Tensor& t) {
        return shape_text(t) + " " + c10::toString(t.scalar_type()) + " on " + t.device().str();
      };
      throw Error(name + " is " + describe(a) + " but attentions[0] is " + describe(first) +
                  "; all layers must match");
    }
  }
  const auto& first = attentions.front();
  AttentionShape shape;
  shape.layers = static_cast<int64_t>(attentions.size());
  shape.batch = first.size(0);
  shape.heads = first.size(1);
  shape.tokens = first.size(2);
  shape.prefix = prefix_tokens;
  shape.grid = shape.tokens > prefix_tokens ? exact_sqrt(shape.tokens - prefix_tokens) : -1;
  if (shape.batch < 1 || shape.heads < 1) {
    throw Error(where + ": attention shape " + shape_text(first) +
                " has no images or no heads; expected B >= 1 and H >= 1");
  }
  if (shape.grid < 1) {
    throw Error(where + ": " + std::to_string(shape.tokens) + " tokens is not " +
                std::to_string(prefix_tokens) + " + g*g; expected " +
                (prefix_tokens == 1 ? std::string("a class token")
                                    : std::to_string(prefix_tokens) + " prefix tokens") +
                " plus a square patch grid");
  }
  return shape;
}

// One pass over each tensor and a single device sync for the list.
void check_attention_values(const std::vector<torch::Tensor>& attentions,
                            const std::string& where) {
  std::vector<torch::Tensor> flags;
  flags.reserve(attentions.size());
  for (const auto& a : attentions)
    flags.push_back(all_valid(a));
  throw_on_invalid(flags, where);
}

torch::Tensor rollout_matrix(const std::vector<torch::Tensor>& attentions,
                             const RolloutOptions& options) {
  check_attention_shapes(attentions, kRolloutWhere, options.prefix_tokens);
  check_options(options);
  std::vector<torch::Tensor> flags;
  auto rollout = layer_matrix(attentions.front(), options, flags);
  for (size_t l = 1; l < attentions.size(); ++l) {
    rollout = torch::bmm(layer_matrix(attentions[l], options, flags), rollout);  // (B, N, N)
  }
  throw_on_invalid(flags, kRolloutWhere);
  return rollout;
}

torch::Tensor rollout_masks(const std::vector<torch::Tensor>& attentions,
                            const RolloutOptions& options) {
  const auto shape = check_attention_shapes(attentions, kRolloutWhere, options.prefix_tokens);
  check_options(options);
  const auto& first = attentions.front();
  // w^T M_L ... M_1 from the left: vector-matrix products, O(N^2) per layer instead of
  // the O(N^3) of the full product.
  auto rows = rollout_source_weights(options.source, shape,
                                     torch::dtype(compute_dtype(first)).device(first.device()),
                                     options.pool_attention);  // (B, 1, N)
  // Filled from the last layer down; reversed so a message names the first bad layer.
  std::vector<torch::Tensor> flags;
  for (auto l = shape.layers - 1; l >= 0; --l) {
    rows = torch::bmm(rows, layer_matrix(attentions[l], options, flags));  // (B, 1, N)
  }
  std::reverse(flags.begin(), flags.end());
  throw_on_invalid(flags, kRolloutWhere);
  return normalize_maps(rows.squeeze(1), shape);
}

torch::Tensor rollout_masks_from_matrix(const torch::Tensor& rollout, RolloutSource source,
                                        int64_t prefix_tokens,
                                        const torch::Tensor& pool_attention) {
  if (!rollout.defined() || rollout.dim() != 3 || rollout.size(1) != rollout.size(2)) {
    throw Error(std::string(kRolloutWhere) + ": rollout matrix has shape " +
                (rollout.defined() ? shape_text(rollout) : "undefined") + "; expected (B,N,N)");
  }
  // Reuse the list checks for the token count, dtype and values: (B,N,N) -> (B,1,N,N).
  const std::vector<torch::Tensor> as_list = {rollout.unsqueeze(1)};
  const auto shape = check_attention_shapes(as_list, kRolloutWhere, prefix_tokens);
  check_attention_values(as_list, kRolloutWhere);
  const auto weights = rollout_source_weights(source, shape, rollout.options(), pool_attention);
  return normalize_maps(torch::bmm(weights, rollout).squeeze(1), shape);  // (B, g, g)
}

}  // namespace vit
