#include "vit/data/rand_augment.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include <torch/torch.h>

#include "vit/device.hpp"
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
  // PIL's SMOOTH kernel (1 everywhere, 5 in the centre, / 13) as nine shifted
  // adds of the zero-padded batch plus 4 x the centre: on the CPU this beats
  // both a grouped convolution and avg_pool2d by a factor of ten.
  const int64_t h = x.size(2), w = x.size(3);
  const auto padded = torch::constant_pad_nd(x, {1, 1, 1, 1}, 0);
  auto sum = x * 4.0;
  for (int64_t dy = 0; dy < 3; ++dy) {
    for (int64_t dx = 0; dx < 3; ++dx)
      sum.add_(padded.slice(2, dy, dy + h).slice(3, dx, dx + w));
  }
  return sum.div_(13.0);
}

at::Tensor auto_contrast(const at::Tensor& x) {
  const auto low = x.amin({2, 3}, /*keepdim=*/true);
  const auto high = x.amax({2, 3}, /*keepdim=*/true);
  const auto spread = high - low;
  return torch::where(spread > 0, (x - low) / spread.clamp_min(1e-6), x);
}

// Samples each image through theta (B, 2, 3), which maps output coordinates in
// [-1, 1] to input coordinates; pixels from outside the image are black.
at::Tensor affine(const at::Tensor& x, const at::Tensor& theta) {
  const auto grid = F::affine_grid(theta, x.sizes(), /*align_corners=*/false);
  return F::grid_sample(x, grid,
                        F::GridSampleFuncOptions()
                            .mode(torch::kBilinear)
                            .padding_mode(torch::kZeros)
                            .align_corners(false));
}

bool is_geometric(AugmentOp op) {
  return op == AugmentOp::kRotate || op == AugmentOp::kShearX || op == AugmentOp::kShearY ||
         op == AugmentOp::kTranslateX || op == AugmentOp::kTranslateY;
}

// The (B, 2, 3) affine maps of a geometric op at per-image `level` (B).
at::Tensor affine_theta(AugmentOp op, const at::Tensor& level) {
  const int64_t b = level.size(0);
  auto theta = torch::zeros({b, 2, 3}, level.options());
  auto entry = [&](int64_t row, int64_t col) { return theta.select(1, row).select(1, col); };
  entry(0, 0).fill_(1.0);
  entry(1, 1).fill_(1.0);
  switch (op) {
    case AugmentOp::kRotate: {
      const auto angle = level * (kMaxRotateDeg * M_PI / 180.0);
      entry(0, 0).copy_(angle.cos());
      entry(0, 1).copy_(-angle.sin());
      entry(1, 0).copy_(angle.sin());
      entry(1, 1).copy_(angle.cos());
      break;
    }
    case AugmentOp::kShearX:
      entry(0, 1).copy_(level * kMaxShear);
      break;
    case AugmentOp::kShearY:
      entry(1, 0).copy_(level * kMaxShear);
      break;
    case AugmentOp::kTranslateX:
      entry(0, 2).copy_(level * (2 * kMaxTranslate));
      break;
    case AugmentOp::kTranslateY:
      entry(1, 2).copy_(level * (2 * kMaxTranslate));
      break;
    default:
      break;
  }
  return theta;
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
      // A stronger op inverts more: every pixel above 1 - strength becomes 1 - x.
      const auto invert = (x > 1.0 - strength).to(x.scalar_type());
      return x + invert * (1.0 - 2.0 * x);
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
      return affine(x, affine_theta(op, level.to(x.options())));
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
    // The geometric ops of all their images go through one grid_sample.
    std::vector<int64_t> geometric_members;
    std::vector<at::Tensor> thetas;
    for (int64_t op = 1; op < kNumAugmentOps; ++op) {  // op 0 is the identity
      if (members[op].empty()) continue;
      const auto n = static_cast<int64_t>(members[op].size());
      const auto level =
          to_device(torch::tensor(levels[op], torch::kFloat32), out.device()).view({n});
      const auto kind = static_cast<AugmentOp>(op);
      if (is_geometric(kind)) {
        geometric_members.insert(geometric_members.end(), members[op].begin(), members[op].end());
        thetas.push_back(affine_theta(kind, level));
        continue;
      }
      const auto index =
          to_device(torch::tensor(members[op], torch::kInt64), out.device()).view({n});
      out.index_copy_(0, index, apply_augment_op(kind, out.index_select(0, index), level));
    }
    if (!geometric_members.empty()) {
      const auto n = static_cast<int64_t>(geometric_members.size());
      const auto index =
          to_device(torch::tensor(geometric_members, torch::kInt64), out.device()).view({n});
      out.index_copy_(0, index, affine(out.index_select(0, index), torch::cat(thetas)));
    }
  }
  return out;
}

}  // namespace vit::data
