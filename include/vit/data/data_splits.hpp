#pragma once
// The dataset as training sees it: read by the configured reader, split,
// limited, and converted to the model's channels and image size.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "vit/config.hpp"
#include "vit/data/dataset.hpp"
#include "vit/data/streamed_split.hpp"

namespace vit::data {

// The splits of a dataset that streams (data.stream): files or shards to
// read every epoch, and why it streams.
struct StreamedSplits {
  StreamedSplit train, val, test;
  std::string reason;  // e.g. "data.augment.random_resized_crop crops the original images"
};

struct DataSplits {
  Dataset train;             // training images left after the hold-out and limit_train
  Dataset val;               // data.val_size images held out of the official training set, or val/
  Dataset test;              // the official test set (Tiny-ImageNet: val/), after limit_test
  std::vector<double> mean;  // the normalisation in use, one value per channel
  std::vector<double> std;
  // Set when the data streams: then train, val and test above are empty, and
  // these say what to read (webdataset: val is data.val_shards, test
  // data.test_shards).
  std::optional<StreamedSplits> streamed;
  // Where val came from: held out of the training set, or the dataset's
  // val/ folder (then there is no test split).
  ValidationSource validation = ValidationSource::kHoldout;

  // Sizes and class names, whichever path holds them.
  int64_t train_size() const { return streamed ? streamed->train.size() : train.size(); }
  int64_t val_size() const { return streamed ? streamed->val.size() : val.size(); }
  int64_t test_size() const { return streamed ? streamed->test.size() : test.size(); }
  const std::vector<std::string>& classes() const {
    return streamed ? streamed->train.classes : train.classes;
  }
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

// Whether `config`'s data streams, and why (a line for the log); reads only
// file listings. data.stream true or false decides; "auto" streams for
// webdataset, for a random resized crop (it needs the original images), and
// for an image folder or Tiny-ImageNet whose decoded images would exceed
// data.memory_budget_mb (0: a quarter of the machine's memory). CIFAR, MNIST
// and synthetic data always load into memory; asking them to stream is an error.
struct StreamChoice {
  bool stream = false;
  std::string reason;
};
StreamChoice choose_stream(const Config& config, int64_t listed_images);

// data.validation with "auto" decided from data.root's folders: folder for an
// image folder with train/ and val/ and no test/, else holdout.
ValidationSource validation_source(const DataConfig& data);

// Everything `vit train` needs, from a validated config:
//  1. read the official sets; their class count must equal model.num_classes;
//  2. hold out data.val_size training images, stratified by class and seeded
//     by `seed`; the same val split whatever limit_train is (under
//     data.validation "folder", val/ is the val split instead, whole, and
//     there is no test split);
//  3. limit_train / limit_test > 0 keep that many images of the train / test
//     split, again a seeded stratified subset (not the first N: some layouts
//     are sorted by class), in their original order;
//  4. conform every split to model.channels and model.image_size.
// When the data streams (choose_stream), the same splits of the file listing
// (steps 2 and 3, with the same seeds) or the shards, without decoding.
DataSplits load_data(const Config& config);

// The three splits by name.
enum class SplitName { kTrain, kVal, kTest };

}  // namespace vit::data
