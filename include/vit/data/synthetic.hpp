#pragma once
// data.dataset "synthetic": seeded random images and labels, made in memory
// and never read from disk. For timing the step at any resolution (the GPU
// bench's ViT-S/16 row at 224 px) where no real dataset of that size is at
// hand. Its accuracy means nothing: the labels are random.
// Key: N images, C channels, S image side, K classes.
#include <cstdint>

#include "vit/data/dataset.hpp"

namespace vit::data {

struct SyntheticShape {
  int64_t train = 0;     // N of the official training set (validation is held out of it)
  int64_t test = 0;      // N of the test set
  int64_t channels = 3;  // C
  int64_t side = 32;     // S
  int64_t classes = 10;  // K, named "0" .. "K-1"
};

// Image i of a split is uint8 (C, S, S) of splitmix64 bytes from the stream
// (seed, split, i), and its label that stream's next draw below K: the same
// bytes on every platform and for any thread count.
DatasetPair make_synthetic(const SyntheticShape& shape, uint64_t seed);

// The sizes `vit train` uses: limit_train images to train on (10,000 when 0)
// plus val_size held out, and limit_test test images (1,000 when 0).
SyntheticShape synthetic_shape(int64_t limit_train, int64_t val_size, int64_t limit_test,
                               int64_t channels, int64_t side, int64_t classes);

}  // namespace vit::data
