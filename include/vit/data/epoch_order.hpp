#pragma once
// The order in which a training epoch visits a dataset's N images: a seeded
// Fisher-Yates shuffle, a pure function of (N, seed, epoch). Both batch
// sources use it, so the in-memory and the streamed path visit an image
// folder in the same order.
#include <cstdint>
#include <vector>

namespace vit::data {

std::vector<int64_t> epoch_order(int64_t n, uint64_t seed, int64_t epoch);

}  // namespace vit::data
