#include "vit/analysis/image_batches.hpp"

#include <algorithm>

#include "vit/error.hpp"

namespace vit {

void ImageBatches::for_each(const std::function<void(int64_t, const at::Tensor&)>& visit) const {
  if (batch_size < 1 || !batch)
    throw Error("image batches: batch size " + std::to_string(batch_size) +
                (batch ? "" : " and no source") + ", expected >= 1 and a source");
  for (int64_t first = 0; first < count; first += batch_size)
    visit(first, batch(first, std::min(batch_size, count - first)));
}

}  // namespace vit
