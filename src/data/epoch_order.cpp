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

std::vector<int64_t> padded_for_ranks(std::vector<int64_t> order, int64_t ranks) {
  const auto n = static_cast<int64_t>(order.size());
  const int64_t padded = padded_length(n, ranks);
  order.reserve(static_cast<size_t>(padded));
  for (int64_t i = n; i < padded; ++i)
    order.push_back(order[static_cast<size_t>((i - n) % n)]);  // reserved: no reallocation
  return order;
}

int64_t padded_length(int64_t n, int64_t ranks) {
  return (n + ranks - 1) / ranks * ranks;
}

int64_t epoch_batches(int64_t n, int64_t batch, bool drop_last) {
  return drop_last ? n / batch : (n + batch - 1) / batch;
}

std::pair<int64_t, int64_t> rank_rows(int64_t rows, int64_t rank, int64_t ranks) {
  return {rows * rank / ranks, rows * (rank + 1) / ranks};
}

}  // namespace vit::data
