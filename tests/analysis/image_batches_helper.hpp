#pragma once
// ImageBatches over a tensor already normalised, for the analysis tests.
#include <ATen/core/Tensor.h>

#include "vit/analysis/image_batches.hpp"

namespace vit::testing {

inline ImageBatches batches_of(const at::Tensor& images, int64_t batch_size) {
  ImageBatches batches;
  batches.count = images.size(0);
  batches.batch_size = batch_size;
  batches.batch = [images](int64_t first, int64_t size) { return images.narrow(0, first, size); };
  return batches;
}

}  // namespace vit::testing
