// Shape key: B batch, C channels, S image side, g grid side, P patches,
// p patch side, T steps, K classes.
#include "vit/analysis/faithfulness.hpp"

#include <random>

#include <torch/torch.h>

#include "vit/analysis/saliency.hpp"
#include "vit/error.hpp"

namespace vit {
namespace {

// Images at a time through the model while the curves are measured.
constexpr int64_t kForwardBatch = 256;

// One bounded draw in [0, bound) from the 64-bit engine, the same on every
// platform (std::uniform_int_distribution's algorithm is the library's own).
uint64_t draw_below(std::mt19937_64& engine, uint64_t bound) {
  const uint64_t limit = UINT64_MAX - UINT64_MAX % bound;
  uint64_t value = engine();
  while (value >= limit)
    value = engine();
  return value % bound;
}

// (B, P) of 0/1 in patch space -> (B, 1, S, S) in pixel space.
at::Tensor pixel_mask(const at::Tensor& patch_mask, int64_t grid, int64_t patch) {
  return patch_mask.view({patch_mask.size(0), 1, grid, 1, grid, 1})
      .expand({patch_mask.size(0), 1, grid, patch, grid, patch})
      .reshape({patch_mask.size(0), 1, grid * patch, grid * patch});
}

// The explained class's probability for each image of `images` (M, C, S, S).
at::Tensor class_probability(VisionTransformer& model, const at::Tensor& images,
                             const at::Tensor& classes) {
  std::vector<at::Tensor> chunks;
  for (int64_t first = 0; first < images.size(0); first += kForwardBatch) {
    const int64_t size = std::min(kForwardBatch, images.size(0) - first);
    const auto logits = model->forward(images.narrow(0, first, size)).to(torch::kDouble);
    chunks.push_back(logits.softmax(/*dim=*/1)
                         .gather(1, classes.narrow(0, first, size).unsqueeze(1))
                         .squeeze(1));
  }
  return torch::cat(chunks);  // (M)
}

}  // namespace

const std::vector<FaithfulnessMethod>& faithfulness_methods() {
  static const std::vector<FaithfulnessMethod> all = {FaithfulnessMethod::kRollout,
                                                      FaithfulnessMethod::kGrad,
                                                      FaithfulnessMethod::kGradXInput,
                                                      FaithfulnessMethod::kGradRollout,
                                                      FaithfulnessMethod::kIntegratedGradients,
                                                      FaithfulnessMethod::kSmoothGrad,
                                                      FaithfulnessMethod::kRandom};
  return all;
}

std::string faithfulness_method_name(FaithfulnessMethod method) {
  switch (method) {
    case FaithfulnessMethod::kRollout:
      return "rollout";
    case FaithfulnessMethod::kGrad:
      return "grad";
    case FaithfulnessMethod::kGradXInput:
      return "grad-x-input";
    case FaithfulnessMethod::kGradRollout:
      return "grad-rollout";
    case FaithfulnessMethod::kIntegratedGradients:
      return "integrated-gradients";
    case FaithfulnessMethod::kSmoothGrad:
      return "smoothgrad";
    case FaithfulnessMethod::kRandom:
      break;
  }
  return "random";
}

at::Tensor patch_sums(const at::Tensor& pixel_map, int64_t patch) {
  if (pixel_map.dim() != 3 || patch < 1 || pixel_map.size(1) % patch != 0 ||
      pixel_map.size(2) != pixel_map.size(1))
    throw Error("patch sums: a map of shape " + c10::str(pixel_map.sizes()) + " and patch " +
                std::to_string(patch) + ", expected (B, S, S) with S a multiple of the patch");
  const int64_t grid = pixel_map.size(1) / patch;
  return pixel_map.abs()
      .view({pixel_map.size(0), grid, patch, grid, patch})
      .sum(/*dim=*/{2, 4});  // (B, g, g)
}

at::Tensor salience_order(const at::Tensor& scores) {
  const auto flat = scores.reshape({scores.size(0), -1}).to(torch::kDouble);  // (B, P)
  return std::get<1>(flat.sort(/*stable=*/true, /*dim=*/1, /*descending=*/true));
}

at::Tensor random_order(int64_t batch, int64_t patches, uint64_t seed, int64_t first) {
  auto order = torch::empty({batch, patches}, torch::kLong);
  for (int64_t b = 0; b < batch; ++b) {
    std::mt19937_64 engine(seed * 0x9E3779B97F4A7C15ULL + static_cast<uint64_t>(first + b));
    std::vector<int64_t> ranks(static_cast<size_t>(patches));
    for (int64_t i = 0; i < patches; ++i)
      ranks[static_cast<size_t>(i)] = i;
    for (int64_t i = patches - 1; i > 0; --i)  // Fisher-Yates
      std::swap(ranks[static_cast<size_t>(i)],
                ranks[draw_below(engine, static_cast<uint64_t>(i) + 1)]);
    order[b] = torch::tensor(ranks, torch::kLong);
  }
  return order;
}

at::Tensor method_scores(VisionTransformer& model, const at::Tensor& inputs,
                         const at::Tensor& classes, FaithfulnessMethod method,
                         const RolloutOptions& rollout) {
  switch (method) {
    case FaithfulnessMethod::kRollout: {
      torch::NoGradGuard no_grad;
      const LogitsAndAttention out = model->forward_with_attention(inputs);
      RolloutOptions options = rollout;
      options.pool_attention = out.pool_attention;
      return rollout_masks(out.attention, options);
    }
    case FaithfulnessMethod::kGrad:
    case FaithfulnessMethod::kGradXInput:
    case FaithfulnessMethod::kIntegratedGradients:
    case FaithfulnessMethod::kSmoothGrad: {
      // The pixel methods have `vit saliency`'s names.
      const auto pixels =
          enum_named<SaliencyMethod>(faithfulness_method_name(method), "faithfulness method");
      const auto saliency = compute_saliency(model, inputs, pixels, classes, rollout.source);
      return patch_sums(saliency.maps, model->config().patch_size);  // of |map|
    }
    case FaithfulnessMethod::kGradRollout:
      return compute_saliency(model, inputs, SaliencyMethod::kGradRollout, classes, rollout.source)
          .maps;
    case FaithfulnessMethod::kRandom:
      break;
  }
  throw Error("faithfulness: the random method has an order, not scores");
}

std::vector<int64_t> removed_counts(int64_t patches, int64_t step) {
  if (step < 1 || step > patches)
    throw Error("faithfulness: step " + std::to_string(step) + ", expected 1.." +
                std::to_string(patches) + " (the number of patches)");
  std::vector<int64_t> counts;
  for (int64_t removed = 0;; removed += step) {
    counts.push_back(std::min(removed, patches));
    if (removed >= patches) break;
  }
  return counts;
}

FaithfulnessCurves deletion_insertion(VisionTransformer& model, const at::Tensor& inputs,
                                      const at::Tensor& classes, const at::Tensor& order,
                                      int64_t step) {
  torch::NoGradGuard no_grad;
  const ModelConfig& m = model->config();
  const int64_t grid = m.image_size / m.patch_size, patches = grid * grid;
  const int64_t batch = inputs.size(0);
  if (order.dim() != 2 || order.size(0) != batch || order.size(1) != patches)
    throw Error("faithfulness: an order of shape " + c10::str(order.sizes()) + ", expected (" +
                std::to_string(batch) + ", " + std::to_string(patches) + ")");
  const std::vector<int64_t> counts = removed_counts(patches, step);
  const auto steps = static_cast<int64_t>(counts.size());
  // rank[b][p]: where patch p comes in image b's order; patch p is out after
  // step s when rank < counts[s].
  const auto rank = torch::empty_like(order).scatter_(
      1, order, torch::arange(patches, order.options()).expand({batch, patches}).contiguous());
  const auto limits = torch::tensor(counts, torch::kLong).view({1, steps, 1});
  const auto out = rank.cpu().unsqueeze(1).lt(limits).to(inputs.scalar_type());  // (B, T+1, P)
  const auto removed = pixel_mask(out.view({batch * steps, patches}).to(inputs.device()), grid,
                                  m.patch_size);  // (B*(T+1), 1, S, S)
  const auto repeated = inputs.unsqueeze(1)
                            .expand({batch, steps, inputs.size(1), m.image_size, m.image_size})
                            .reshape({batch * steps, inputs.size(1), m.image_size, m.image_size});
  const auto explained = classes.to(inputs.device()).repeat_interleave(steps);
  FaithfulnessCurves curves;
  curves.deletion =
      class_probability(model, repeated * (1 - removed), explained).view({batch, steps}).cpu();
  curves.insertion =
      class_probability(model, repeated * removed, explained).view({batch, steps}).cpu();
  return curves;
}

double curve_area(const std::vector<double>& curve, int64_t patches, int64_t step) {
  const std::vector<int64_t> counts = removed_counts(patches, step);
  if (curve.size() != counts.size())
    throw Error("faithfulness: a curve of " + std::to_string(curve.size()) + " points, expected " +
                std::to_string(counts.size()));
  double area = 0;
  for (size_t s = 1; s < counts.size(); ++s)
    area += 0.5 * (curve[s - 1] + curve[s]) * static_cast<double>(counts[s] - counts[s - 1]) /
            static_cast<double>(patches);
  return area;
}

}  // namespace vit
