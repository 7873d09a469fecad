#include "vit/data/streamed_split.hpp"

#include <numeric>

#include <torch/torch.h>

#include "vit/error.hpp"

namespace vit::data {

int64_t StreamedSplit::size() const {
  if (from_shards()) return std::accumulate(shard_samples.begin(), shard_samples.end(), int64_t{0});
  return static_cast<int64_t>(files.size());
}

StreamedSplit StreamedSplit::subset(const at::Tensor& indices) const {
  if (from_shards()) throw Error(source + ": WebDataset shards are read whole, not by image");
  StreamedSplit out;
  out.classes = classes;
  out.source = source;
  const auto index = indices.to(torch::kCPU).to(torch::kInt64).contiguous();
  const int64_t* i = index.data_ptr<int64_t>();
  for (int64_t k = 0; k < index.numel(); ++k) {
    if (i[k] < 0 || i[k] >= size())
      throw Error(source + ": image " + std::to_string(i[k]) + " of " + std::to_string(size()));
    out.files.push_back(files[i[k]]);
    out.labels.push_back(labels[i[k]]);
  }
  return out;
}

StreamedSplit StreamedSplit::share(int64_t rank, int64_t world) const {
  if (world == 1) return *this;
  StreamedSplit out;
  out.classes = classes;
  out.source = source;
  if (from_shards()) {
    for (size_t s = static_cast<size_t>(rank); s < shards.size(); s += static_cast<size_t>(world)) {
      out.shards.push_back(shards[s]);
      out.shard_samples.push_back(shard_samples[s]);
    }
    return out;
  }
  const int64_t n = size();
  return subset(torch::arange(n * rank / world, n * (rank + 1) / world, torch::kInt64));
}

at::Tensor StreamedSplit::label_tensor() const {
  if (from_shards()) throw Error(source + ": the labels of WebDataset shards are read with them");
  return torch::tensor(labels, torch::kInt64).view({static_cast<int64_t>(labels.size())});
}

}  // namespace vit::data
