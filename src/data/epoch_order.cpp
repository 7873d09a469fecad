#include "vit/data/epoch_order.hpp"

#include <numeric>
#include <utility>

#include "vit/data/rng.hpp"

namespace vit::data {
namespace {

constexpr uint64_t kShuffleStream = 1;  // beside the batch augmentation's 2 (data/batch_loader)

}  // namespace

std::vector<int64_t> epoch_order(int64_t n, uint64_t seed, int64_t epoch) {
  std::vector<int64_t> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  Rng rng = Rng::derive({seed, kShuffleStream, static_cast<uint64_t>(epoch)});
  for (int64_t i = n - 1; i > 0; --i)
    std::swap(order[i], order[rng.below(static_cast<uint64_t>(i) + 1)]);
  return order;
}

}  // namespace vit::data
