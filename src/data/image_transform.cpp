#include "vit/data/image_transform.hpp"

#include <algorithm>
#include <cmath>

namespace vit::data {
namespace {

// Python's round(): to the nearest integer, halves to the even one.
int64_t round_half_even(double x) {
  return static_cast<int64_t>(std::nearbyint(x));  // the default rounding mode is to nearest even
}

double uniform_between(Rng& rng, double low, double high) {
  return low + (high - low) * rng.uniform();
}

}  // namespace

// Up to ten tries of an area share uniform in `scale` and an aspect ratio
// log-uniform in `ratio`, the sides rounded, until the box fits; then its corner
// uniform over the places it fits. After ten misses, the centred box of the whole
// image clamped to the ratio range.
CropBox random_resized_crop_box(int64_t height, int64_t width, const RandomResizedCrop& crop,
                                Rng& rng) {
  const double area = double(height) * double(width);
  const double log_low = std::log(crop.ratio[0]), log_high = std::log(crop.ratio[1]);
  for (int attempt = 0; attempt < 10; ++attempt) {
    const double target_area = area * uniform_between(rng, crop.scale[0], crop.scale[1]);
    const double aspect = std::exp(uniform_between(rng, log_low, log_high));
    const int64_t w = round_half_even(std::sqrt(target_area * aspect));
    const int64_t h = round_half_even(std::sqrt(target_area / aspect));
    if (w > 0 && w <= width && h > 0 && h <= height) {
      const auto top = static_cast<int64_t>(rng.below(static_cast<uint64_t>(height - h + 1)));
      const auto left = static_cast<int64_t>(rng.below(static_cast<uint64_t>(width - w + 1)));
      return {top, left, h, w};
    }
  }
  // The fallback: a centred crop of the whole image, at the nearest ratio allowed.
  const double in_ratio = double(width) / double(height);
  int64_t w = width, h = height;
  if (in_ratio < crop.ratio[0]) {
    h = std::max<int64_t>(1, round_half_even(double(w) / crop.ratio[0]));
  } else if (in_ratio > crop.ratio[1]) {
    w = std::max<int64_t>(1, round_half_even(double(h) * crop.ratio[1]));
  }
  return {(height - h) / 2, (width - w) / 2, h, w};
}

io::CropResizePlan random_resized_crop_plan(int64_t height, int64_t width, int64_t side,
                                            const RandomResizedCrop& crop, Rng& rng) {
  const CropBox box = random_resized_crop_box(height, width, crop, rng);
  io::CropResizePlan plan;
  plan.top = box.top;
  plan.left = box.left;
  plan.height = box.height;
  plan.width = box.width;
  plan.out_height = plan.out_width = side;
  return plan;
}

// The shorter side resized to floor(S / crop_pct), the longer in proportion
// (truncated, as torchvision does), then the centre S x S window (its corner rounded
// half to even, as Python's round()).
io::CropResizePlan center_crop_plan(int64_t height, int64_t width, int64_t side, double crop_pct) {
  const auto resized_short = static_cast<int64_t>(std::floor(double(side) / crop_pct));
  const bool tall = height >= width;
  const int64_t short_side = tall ? width : height, long_side = tall ? height : width;
  const auto resized_long = static_cast<int64_t>(double(resized_short) * double(long_side) /
                                                 double(short_side));  // truncated, as torchvision
  io::CropResizePlan plan;
  plan.height = height;
  plan.width = width;
  plan.out_height = tall ? resized_long : resized_short;
  plan.out_width = tall ? resized_short : resized_long;
  plan.crop_height = std::min(side, plan.out_height);
  plan.crop_width = std::min(side, plan.out_width);
  plan.crop_top = round_half_even(double(plan.out_height - plan.crop_height) / 2.0);
  plan.crop_left = round_half_even(double(plan.out_width - plan.crop_width) / 2.0);
  return plan;
}

io::CropResizePlan squash_plan(int64_t height, int64_t width, int64_t side, double crop_pct) {
  io::CropResizePlan plan;
  plan.height = height;
  plan.width = width;
  plan.out_height = plan.out_width = static_cast<int64_t>(std::floor(double(side) / crop_pct));
  if (plan.out_height > side) {
    plan.crop_height = plan.crop_width = side;
    plan.crop_top = plan.crop_left = round_half_even(double(plan.out_height - side) / 2.0);
  }
  return plan;
}

io::CropResizePlan evaluation_plan(const EvaluationTransform& transform, int64_t height,
                                   int64_t width, int64_t side) {
  io::CropResizePlan plan = transform.mode == CropMode::kCenter
                                ? center_crop_plan(height, width, side, transform.crop_pct)
                                : squash_plan(height, width, side, transform.crop_pct);
  plan.interpolation = transform.interpolation;
  return plan;
}

bool needs_original_images(const EvaluationTransform& transform) {
  return transform.mode != CropMode::kSquash || transform.crop_pct != 1.0 ||
         transform.interpolation != Interpolation::kArea;
}

}  // namespace vit::data
