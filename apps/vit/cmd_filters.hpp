#pragma once
#include "model_source.hpp"

namespace vit::cli {

struct FiltersOptions {
  CommonOptions common;
  ModelSource model;   // --checkpoint, --config, --out
  int64_t count = 28;  // --count K: components drawn and listed
};

std::shared_ptr<FiltersOptions> register_filters(Cli& cli);
// Runs the command with filled-in options (also used by `vit report`).
int run_filters(const FiltersOptions& o);

}  // namespace vit::cli
