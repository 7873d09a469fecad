#pragma once
// Loading a dataset once per command. `vit report` runs seven analyses, and
// each calls load_data with the run's config: without this, the dataset is
// read, split and converted seven times (Fashion-MNIST takes 0.2 s a time;
// CIFAR and Tiny-ImageNet take longer). While a
// ReuseLoadedData lives, load_data keeps the last splits it made and returns
// them again (the same tensors, not copies) for a config with the same data
// section, seed, channels, image size and class count. Outside such a scope
// nothing is kept, so a training run never holds a second copy.
// Callers must not write into the returned tensors; none does.
#include <string>

#include "vit/data/load.hpp"

namespace vit::data {

class ReuseLoadedData {
 public:
  ReuseLoadedData();
  ~ReuseLoadedData();  // the outermost scope forgets the kept splits
  ReuseLoadedData(const ReuseLoadedData&) = delete;
  ReuseLoadedData& operator=(const ReuseLoadedData&) = delete;
};

// What decides the splits load_data makes from `config`.
std::string loaded_data_key(const Config& config);

// The splits kept under `key`, when a ReuseLoadedData is alive and the last
// splits kept have that key; nullptr otherwise.
const DataSplits* reusable_splits(const std::string& key);

// Keeps `splits` under `key` (replacing what was kept) when a ReuseLoadedData
// is alive; does nothing otherwise.
void keep_splits(const std::string& key, const DataSplits& splits);

}  // namespace vit::data
