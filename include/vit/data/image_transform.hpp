#pragma once
// What the streamed pipeline takes of each image, as a plan for io::decode_planned.
// Pure arithmetic on the image's size; the random draws come from the Rng passed in.
// Key: H x W the image, S the model's side.
#include <cstdint>

#include "vit/config.hpp"
#include "vit/data/rng.hpp"
#include "vit/io/planned_decode.hpp"

namespace vit::data {

struct CropBox {
  int64_t top = 0, left = 0, height = 0, width = 0;
};

// torchvision's RandomResizedCrop.get_params (0.14), draw for draw.
CropBox random_resized_crop_box(int64_t height, int64_t width, const RandomResizedCrop& crop,
                                Rng& rng);

// Training: a random resized crop of the image, resized to S x S.
io::CropResizePlan random_resized_crop_plan(int64_t height, int64_t width, int64_t side,
                                            const RandomResizedCrop& crop, Rng& rng);

// timm's center crop: Resize(floor(S / crop_pct)), CenterCrop(S), with torchvision's
// and Python's roundings.
io::CropResizePlan center_crop_plan(int64_t height, int64_t width, int64_t side, double crop_pct);

// timm's squash: both sides resized to floor(S / crop_pct), then CenterCrop(S). At
// crop_pct 1 the whole image squashed to S x S, the in-memory path's transform.
io::CropResizePlan squash_plan(int64_t height, int64_t width, int64_t side, double crop_pct = 1.0);

// The plan of evaluation_transform(config.data) (vit/config.hpp) for an H x W image.
io::CropResizePlan evaluation_plan(const EvaluationTransform& transform, int64_t height,
                                   int64_t width, int64_t side);

// Whether the transform needs each original image, where the in-memory path keeps
// images squashed once with area averaging.
bool needs_original_images(const EvaluationTransform& transform);

}  // namespace vit::data
