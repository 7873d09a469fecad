#pragma once
// The dataset as training sees it: read by the configured reader, split,
// limited, and converted to the model's channels and image size.
#include <cstdint>
#include <string>
#include <vector>

#include "vit/config.hpp"
#include "vit/data/dataset.hpp"

namespace vit::data {

struct DataSplits {
  Dataset train;             // training images left after the hold-out and limit_train
  Dataset val;               // data.val_size images held out of the official training set
  Dataset test;              // the official test set (Tiny-ImageNet: val/), after limit_test
  std::vector<double> mean;  // the normalisation in use, one value per channel
  std::vector<double> std;
};

// The official train and test sets of data.dataset from data.root, as stored
// (native channels and size, except image folders, which are decoded straight
// to the model's channels and size, and synthetic data, made at that size
// from `seed`).
DatasetPair read_dataset(const DataConfig& data, const ModelConfig& model, uint64_t seed);

// Converts to `channels` (gray -> RGB replicates, RGB -> gray takes
// 0.299 R + 0.587 G + 0.114 B, rounded) and resizes to side x side when the
// size differs. Returns the input's tensors when nothing changes.
Dataset conform(const Dataset& data, int64_t channels, int64_t side);

// Everything `vit train` needs, from a validated config:
//  1. read the official sets; their class count must equal model.num_classes;
//  2. hold out data.val_size training images, stratified by class and seeded
//     by `seed`; the same val split whatever limit_train is;
//  3. limit_train / limit_test > 0 keep that many images of the train / test
//     split, again a seeded stratified subset (not the first N: some layouts
//     are sorted by class), in their original order;
//  4. conform every split to model.channels and model.image_size.
DataSplits load_data(const Config& config);

}  // namespace vit::data
