#pragma once
// Streamed images brought into memory, decoded as the streamed evaluation
// decodes them (data/stream_loader): for what needs images at hand, such as
// the analyses, the probes and `vit eval`'s highest-loss grid.
#include <cstdint>
#include <vector>

#include "vit/config.hpp"
#include "vit/data/dataset.hpp"
#include "vit/data/streamed_split.hpp"

namespace vit::data {

// The first `limit` images of the split (all of them when limit <= 0), in order.
Dataset materialize(const StreamedSplit& split, const Config& config, int64_t limit);

// `count` images of the split to stand for all of it: for files a seeded
// uniform draw without replacement (config.seed), in the split's order (a
// folder lists its files class by class, so its first images would be one
// class); for shards the first `count`, as shards are written shuffled.
Dataset materialize_sample(const StreamedSplit& split, const Config& config, int64_t count);

// The images at `positions` (indices into the split's order: files in their
// order, shards sample by sample), in the order given. Files are read alone;
// shards are read through up to the last position, decoding only those.
Dataset materialize_at(const StreamedSplit& split, const Config& config,
                       const std::vector<int64_t>& positions);

}  // namespace vit::data
