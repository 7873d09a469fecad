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
  // Set when the data streams; then train, val and test above are empty.
  std::optional<StreamedSplits> streamed;
  // kFolder: val is the dataset's val/ folder, and there is no test split.
  ValidationSource validation = ValidationSource::kHoldout;

  int64_t train_size() const { return streamed ? streamed->train.size() : train.size(); }
  int64_t val_size() const { return streamed ? streamed->val.size() : val.size(); }
  int64_t test_size() const { return streamed ? streamed->test.size() : test.size(); }
  const std::vector<std::string>& classes() const {
    return streamed ? streamed->train.classes : train.classes;
  }
};

// The official train and test sets of data.dataset from data.root, in their native
// channels and size (image folders and synthetic data, made from `seed`: the model's).
DatasetPair read_dataset(const DataConfig& data, const ModelConfig& model, uint64_t seed);

// Converts to `channels` (gray -> RGB replicates, RGB -> gray is 0.299 R + 0.587 G +
// 0.114 B, rounded) and resizes to side x side; the input's tensors if nothing changes.
Dataset conform(const Dataset& data, int64_t channels, int64_t side);

// Whether `config`'s data streams, and why (a line for the log), by data.stream's
// rule, given the listed image count. Asking CIFAR, MNIST or synthetic data to stream
// is an error.
struct StreamChoice {
  bool stream = false;
  std::string reason;
};
StreamChoice choose_stream(const Config& config, int64_t listed_images);

// data.validation with "auto" decided from data.root's folders.
ValidationSource validation_source(const DataConfig& data);

// Everything `vit train` needs, from a validated config:
//  1. read the official sets; their class count must equal model.num_classes;
//  2. hold out data.val_size training images, stratified and seeded; the same val
//     split whatever limit_train is (data.validation "folder": val/, whole);
//  3. limit_train / limit_test > 0 keep a seeded stratified subset of that many
//     images of the train / test split, in their original order;
//  4. conform every split to model.channels and model.image_size.
// Streamed data gets the same splits of its file listing, or the shards, undecoded.
DataSplits load_data(const Config& config);

// The three splits by name.
enum class SplitName { kTrain, kVal, kTest };

}  // namespace vit::data
