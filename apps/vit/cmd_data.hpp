#pragma once
#include "cli.hpp"

namespace vit::cli {

struct DataOptions {
  CommonOptions common;
  std::string config;                  // --config FILE
  std::vector<std::string> overrides;  // --set KEY=VALUE
  bool json = false;                   // --json
  std::string out;                     // --out DIR: writes DIR/samples.png
  int64_t bench = 0;                   // --bench N (hidden): time N training batches
  bool download = false;               // --download: fetch the dataset first (data.download)
};

std::shared_ptr<DataOptions> register_data(Cli& cli);

}  // namespace vit::cli
