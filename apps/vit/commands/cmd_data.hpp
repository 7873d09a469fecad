#pragma once
#include "cli/cli.hpp"

namespace vit::cli {

struct DataOptions {
  CommonOptions common;
  std::string config;                  // --config FILE
  std::vector<std::string> overrides;  // --set KEY=VALUE
  bool json = false;                   // --json
  std::string out;                     // --out DIR: writes DIR/samples.png
  int64_t bench = 0;                   // --bench N: time N training batches, files to batch
  bool download = false;               // --download: fetch the dataset first (data.download)
  std::string write_shards;            // --write-shards DIR: the image folder as WebDataset shards
  int64_t shard_size = 1000;           // --shard-size N: images a shard
};

std::shared_ptr<DataOptions> register_data(Cli& cli);

}  // namespace vit::cli
