#pragma once
// A training epoch: the order in which it visits a dataset's N images (a
// seeded Fisher-Yates shuffle, a pure function of (N, seed, epoch), shared by
// the in-memory and the streamed path), how many batches it makes, and which
// rows of a global batch each data-parallel rank takes.
#include <cstdint>
#include <utility>
#include <vector>

namespace vit::data {

std::vector<int64_t> epoch_order(int64_t n, uint64_t seed, int64_t epoch);

// `order` padded as torch's DistributedSampler pads: its first entries
// repeated at the end until its length is a multiple of `ranks`.
std::vector<int64_t> padded_for_ranks(std::vector<int64_t> order, int64_t ranks);
// The length padded_for_ranks gives `n` entries.
int64_t padded_length(int64_t n, int64_t ranks);

// The batches of `batch` images in an epoch of `n`: whole batches alone when
// `drop_last`, else the last partial one too.
int64_t epoch_batches(int64_t n, int64_t batch, bool drop_last);

// Rows [first, second) of a global batch of `rows` that rank `rank` of
// `ranks` takes; equal shares when `ranks` divides `rows`.
std::pair<int64_t, int64_t> rank_rows(int64_t rows, int64_t rank, int64_t ranks);

}  // namespace vit::data
