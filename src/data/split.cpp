#include "vit/data/split.hpp"

#include <algorithm>
#include <numeric>
#include <vector>

#include <torch/torch.h>

#include "vit/data/rng.hpp"
#include "vit/error.hpp"

namespace vit::data {

namespace {

constexpr uint64_t kTieStream = ~uint64_t{0};  // never a class index

// Per-class quotas by largest remainder, so they sum to exactly `count`.
std::vector<int64_t> class_quotas(const std::vector<int64_t>& per_class, int64_t total,
                                  int64_t count, uint64_t seed) {
  const auto k = per_class.size();
  std::vector<int64_t> quota(k);
  std::vector<int64_t> remainder(k);
  int64_t assigned = 0;
  for (size_t c = 0; c < k; ++c) {
    quota[c] = count * per_class[c] / total;
    remainder[c] = count * per_class[c] % total;
    assigned += quota[c];
  }
  std::vector<size_t> order(k);
  std::iota(order.begin(), order.end(), 0);
  // Ties are common (e.g. 64 of 200 equal classes); a seeded shuffle before the
  // stable sort spreads them over all classes instead of favouring the first.
  Rng rng = Rng::derive({seed, kTieStream});
  for (size_t i = k; i > 1; --i)
    std::swap(order[i - 1], order[rng.below(i)]);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return remainder[a] > remainder[b]; });
  for (size_t i = 0; assigned < count; ++i, ++assigned)
    ++quota[order[i]];
  return quota;
}

}  // namespace

Picked stratified_pick(const at::Tensor& labels, int64_t num_classes, int64_t count,
                       uint64_t seed) {
  const int64_t n = labels.size(0);
  if (count < 0 || count > n) {
    throw Error("stratified split: cannot pick " + std::to_string(count) + " of " +
                std::to_string(n) + " images");
  }
  const auto labels_cpu = labels.to(torch::kCPU, torch::kInt64).contiguous();
  const int64_t* label = labels_cpu.data_ptr<int64_t>();
  std::vector<std::vector<int64_t>> members(num_classes);
  for (int64_t i = 0; i < n; ++i) {
    if (label[i] < 0 || label[i] >= num_classes) {
      throw Error("stratified split: label " + std::to_string(label[i]) + " at index " +
                  std::to_string(i) + " is outside 0.." + std::to_string(num_classes - 1));
    }
    members[label[i]].push_back(i);
  }
  std::vector<int64_t> per_class(num_classes);
  for (int64_t c = 0; c < num_classes; ++c)
    per_class[c] = static_cast<int64_t>(members[c].size());
  const auto quota =
      n > 0 ? class_quotas(per_class, n, count, seed) : std::vector<int64_t>(num_classes);

  std::vector<uint8_t> chosen(n, 0);
  for (int64_t c = 0; c < num_classes; ++c) {
    // A partial Fisher-Yates shuffle: the first quota[c] slots are the pick.
    Rng rng = Rng::derive({seed, static_cast<uint64_t>(c)});
    auto& m = members[c];
    for (int64_t i = 0; i < quota[c]; ++i) {
      const auto j = i + static_cast<int64_t>(rng.below(m.size() - i));
      std::swap(m[i], m[j]);
      chosen[m[i]] = 1;
    }
  }
  std::vector<int64_t> picked, rest;
  picked.reserve(count);
  rest.reserve(n - count);
  for (int64_t i = 0; i < n; ++i)
    (chosen[i] ? picked : rest).push_back(i);
  auto to_tensor = [](const std::vector<int64_t>& v) {
    return torch::tensor(v, torch::kInt64).reshape({static_cast<int64_t>(v.size())});
  };
  return {to_tensor(picked), to_tensor(rest)};
}

}  // namespace vit::data
