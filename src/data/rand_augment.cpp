#include "vit/data/rand_augment.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include <torch/torch.h>

#include "vit/error.hpp"

namespace vit::data {

namespace {

namespace F = torch::nn::functional;

constexpr double kMaxFactorChange = 0.9;  // brightness/contrast/colour/sharpness: 1 +- 0.9
constexpr double kMaxRotateDeg = 30.0;
constexpr double kMaxShear = 0.3;
constexpr double kMaxTranslate = 0.45;  // fraction of the side, as in timm and torchvision

// ITU-R 601 luma, as PIL's convert("L"). (B, C, H, W) -> (B, 1, H, W).
at::Tensor luma(const at::Tensor& x) {
  if (x.size(1) == 1) return x;
  const auto weights = torch::tensor({0.299, 0.587, 0.114}, x.options()).view({1, 3, 1, 1});
  return (x * weights).sum(1, /*keepdim=*/true);
}

// PIL's ImageEnhance: blend towards (factor < 1) or away from `base`.
at::Tensor enhance(const at::Tensor& x, const at::Tensor& base, const at::Tensor& level) {
  const auto factor = (1.0 + kMaxFactorChange * level).view({-1, 1, 1, 1});
  return (base + (x - base) * factor).clamp_(0.0, 1.0);
}

at::Tensor blur3x3(const at::Tensor& x) {
  // PIL's SMOOTH kernel, per channel.
  auto kernel = torch::ones({3, 3}, x.options());
  kernel[1][1] = 5.0;
  kernel = (kernel / 13.0).expand({x.size(1), 1, 3, 3}).contiguous();
  return F::conv2d(x, kernel, F::Conv2dFuncOptions().padding(1).groups(x.size(1)));
}

at::Tensor auto_contrast(const at::Tensor& x) {
  const auto low = x.amin({2, 3}, /*keepdim=*/true);
  const auto high = x.amax({2, 3}, /*keepdim=*/true);
  const auto spread = high - low;
  return torch::where(spread > 0, (x - low) / spread.clamp_min(1e-6), x);
}

// Rows of the inverse affine maps (in [-1, 1] coordinates) that grid_sample reads with.
at::Tensor affine(const at::Tensor& x, const at::Tensor& theta) {
  const auto grid = F::affine_grid(theta, x.sizes(), /*align_corners=*/false);
  return F::grid_sample(x, grid,
                        F::GridSampleFuncOptions()
                            .mode(torch::kBilinear)
                            .padding_mode(torch::kZeros)
                            .align_corners(false));
}

at::Tensor geometric(AugmentOp op, const at::Tensor& x, const at::Tensor& level) {
  const int64_t b = x.size(0);
  auto theta = torch::zeros({b, 2, 3}, x.options());
  theta.select(2, 0).select(1, 0).fill_(1.0);
  theta.select(2, 1).select(1, 1).fill_(1.0);
  switch (op) {
    case AugmentOp::kRotate: {
      const auto angle = level * (kMaxRotateDeg * M_PI / 180.0);
      theta.select(1, 0).select(1, 0).copy_(angle.cos());
      theta.select(1, 0).select(1, 1).copy_(-angle.sin());
      theta.select(1, 1).select(1, 0).copy_(angle.sin());
      theta.select(1, 1).select(1, 1).copy_(angle.cos());
      break;
    }
    case AugmentOp::kShearX:
      theta.select(1, 0).select(1, 1).copy_(level * kMaxShear);
      break;
    case AugmentOp::kShearY:
      theta.select(1, 1).select(1, 0).copy_(level * kMaxShear);
      break;
    case AugmentOp::kTranslateX:
      theta.select(1, 0).select(1, 2).copy_(level * (2 * kMaxTranslate));
      break;
    case AugmentOp::kTranslateY:
      theta.select(1, 1).select(1, 2).copy_(level * (2 * kMaxTranslate));
      break;
    default:
      break;
  }
  return affine(x, theta);
}

}  // namespace

at::Tensor apply_augment_op(AugmentOp op, const at::Tensor& x, const at::Tensor& level) {
  const auto strength = level.abs().view({-1, 1, 1, 1});
  switch (op) {
    case AugmentOp::kIdentity:
      return x;
    case AugmentOp::kAutoContrast:
      return auto_contrast(x);
    case AugmentOp::kBrightness:
      return enhance(x, torch::zeros_like(x), level);
    case AugmentOp::kContrast:
      return enhance(x, luma(x).mean({1, 2, 3}, /*keepdim=*/true), level);
    case AugmentOp::kColor:
      return x.size(1) == 1 ? x : enhance(x, luma(x), level);
    case AugmentOp::kSharpness:
      return enhance(x, blur3x3(x), level);
    case AugmentOp::kSolarize: {
      // A stronger op inverts more: every pixel above 1 - strength.
      return torch::where(x > 1.0 - strength, 1.0 - x, x);
    }
    case AugmentOp::kPosterize: {
      // Keep 8 - round(4 * strength) bits of the 8-bit value.
      const auto step = torch::exp2(torch::round(4.0 * strength));
      return torch::floor(x * 255.0 / step) * step / 255.0;
    }
    case AugmentOp::kRotate:
    case AugmentOp::kShearX:
    case AugmentOp::kShearY:
    case AugmentOp::kTranslateX:
    case AugmentOp::kTranslateY:
      return geometric(op, x, level);
  }
  throw Error("apply_augment_op: unknown operation " + std::to_string(static_cast<int>(op)));
}

at::Tensor rand_augment(const at::Tensor& images, int64_t ops, double magnitude, Rng& rng) {
  if (!images.is_floating_point()) throw Error("rand_augment: expected float images in [0, 1]");
  const int64_t b = images.size(0);
  const double strength = std::clamp(magnitude / 30.0, 0.0, 1.0);
  auto out = images.clone();
  for (int64_t slot = 0; slot < ops; ++slot) {
    // Draw every image's op and sign, then run each op once on its group.
    std::vector<std::vector<int64_t>> members(kNumAugmentOps);
    std::vector<std::vector<float>> levels(kNumAugmentOps);
    for (int64_t i = 0; i < b; ++i) {
      const auto op = rng.below(kNumAugmentOps);
      members[op].push_back(i);
      levels[op].push_back(static_cast<float>(rng.below(2) ? strength : -strength));
    }
    for (int64_t op = 1; op < kNumAugmentOps; ++op) {  // op 0 is the identity
      if (members[op].empty()) continue;
      const auto n = static_cast<int64_t>(members[op].size());
      const auto index = torch::tensor(members[op], torch::kInt64).view({n}).to(out.device());
      const auto level = torch::tensor(levels[op], torch::kFloat32).view({n}).to(out.options());
      out.index_copy_(
          0, index,
          apply_augment_op(static_cast<AugmentOp>(op), out.index_select(0, index), level));
    }
  }
  return out;
}

}  // namespace vit::data
