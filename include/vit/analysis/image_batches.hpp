#pragma once
// The images an analysis reads, handed over one normalised batch at a time,
// so that many images of a big model never sit in memory as floats at once.
#include <cstdint>
#include <functional>

#include <ATen/core/Tensor.h>

namespace vit {

struct ImageBatches {
  int64_t count = 0;       // images in all
  int64_t batch_size = 1;  // images per batch, >= 1
  // Images [first, first + size): float (size, C, S, S), normalised as the
  // model expects, on the model's device.
  std::function<at::Tensor(int64_t first, int64_t size)> batch;

  // Calls visit(first, inputs) for every batch in order.
  void for_each(const std::function<void(int64_t, const at::Tensor&)>& visit) const;
};

}  // namespace vit
