#include "vit/data/split_loader.hpp"

#include <torch/torch.h>

#include "vit/data/stream_loader.hpp"

namespace vit::data {

std::unique_ptr<BatchSource> loader_for(const DataSplits& splits, SplitName which,
                                        const Config& config, LoaderOptions options, int64_t rank,
                                        int64_t world) {
  if (splits.streamed) {
    const auto& s = *splits.streamed;
    const StreamedSplit& split = which == SplitName::kTrain ? s.train
                                 : which == SplitName::kVal ? s.val
                                                            : s.test;
    return std::make_unique<StreamLoader>(options.train ? split : split.share(rank, world),
                                          std::move(options), stream_settings(config));
  }
  const Dataset& split = which == SplitName::kTrain ? splits.train
                         : which == SplitName::kVal ? splits.val
                                                    : splits.test;
  if (options.train || world == 1) return std::make_unique<BatchLoader>(split, std::move(options));
  const int64_t n = split.size();
  return std::make_unique<BatchLoader>(
      split.subset(torch::arange(n * rank / world, n * (rank + 1) / world, torch::kInt64)),
      std::move(options));
}

}  // namespace vit::data
