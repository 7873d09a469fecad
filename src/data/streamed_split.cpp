#include "vit/data/streamed_split.hpp"

#include <limits>
#include <numeric>
#include <utility>

#include <torch/torch.h>

#include "vit/error.hpp"

namespace vit::data {

StreamedSplit StreamedSplit::of_files(std::shared_ptr<const FileList> list,
                                      std::vector<std::string> classes, std::string source) {
  if (list->size() > int64_t{std::numeric_limits<uint32_t>::max()})
    throw Error(source + ": " + std::to_string(list->size()) + " files; at most " +
                std::to_string(std::numeric_limits<uint32_t>::max()) + " are read as one split");
  StreamedSplit out;
  out.list = std::move(list);
  out.classes = std::move(classes);
  out.source = std::move(source);
  return out;
}

int64_t StreamedSplit::size() const {
  if (from_shards()) return std::accumulate(shard_samples.begin(), shard_samples.end(), int64_t{0});
  if (rows) return static_cast<int64_t>(rows->size());
  return list ? list->size() : 0;  // no list: an empty split (e.g. no data.test_shards)
}

int64_t StreamedSplit::row(int64_t i) const {
  if (i < 0 || i >= size())
    throw Error(source + ": image " + std::to_string(i) + " of " + std::to_string(size()));
  return rows ? int64_t{(*rows)[static_cast<size_t>(i)]} : i;
}

std::filesystem::path StreamedSplit::path(int64_t i) const {
  return list->path(row(i));
}

int64_t StreamedSplit::label(int64_t i) const {
  return list->label(row(i));
}

StreamedSplit StreamedSplit::subset(const at::Tensor& indices) const {
  if (from_shards()) throw Error(source + ": WebDataset shards are read whole, not by image");
  StreamedSplit out;
  out.list = list;
  out.classes = classes;
  out.source = source;
  const auto index = indices.to(torch::kCPU).to(torch::kInt64).contiguous();
  const int64_t* i = index.data_ptr<int64_t>();
  auto rows_out = std::make_shared<std::vector<uint32_t>>();
  rows_out->reserve(static_cast<size_t>(index.numel()));
  for (int64_t k = 0; k < index.numel(); ++k)
    rows_out->push_back(static_cast<uint32_t>(row(i[k])));
  out.rows = std::move(rows_out);
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
  auto labels = torch::empty({size()}, torch::kInt64);
  int64_t* out = labels.data_ptr<int64_t>();
  for (int64_t k = 0; k < size(); ++k)
    out[k] = label(k);
  return labels;
}

}  // namespace vit::data
