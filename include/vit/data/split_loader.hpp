#pragma once
// The batch source of one split: the in-memory BatchLoader, or a
// StreamLoader when the data streams (DataSplits::streamed).
#include <cstdint>
#include <memory>

#include "vit/config.hpp"
#include "vit/data/batch_loader.hpp"
#include "vit/data/batch_source.hpp"
#include "vit/data/data_splits.hpp"

namespace vit::data {

// `options` as loader_options() makes them (with the training shard set for
// a training loader under torchrun). An evaluation split is shared between
// `world` processes: this one reads its share (`rank`), contiguous for
// images in memory and for files, whole shards for WebDataset.
std::unique_ptr<BatchSource> loader_for(const DataSplits& splits, SplitName which,
                                        const Config& config, LoaderOptions options,
                                        int64_t rank = 0, int64_t world = 1);

}  // namespace vit::data
