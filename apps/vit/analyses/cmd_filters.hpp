#pragma once
#include "cli/opened_model.hpp"

namespace vit::cli {

struct FiltersOptions {
  CommonOptions common;
  ModelSource model;   // --checkpoint, --config, --out
  int64_t count = 28;  // --count K: components drawn and listed
};

std::shared_ptr<FiltersOptions> register_filters(Cli& cli);
// The command on an opened model (also used by `vit report`): returns filters.json.
nlohmann::json write_filters(OpenedModel& opened, const FiltersOptions& o);

}  // namespace vit::cli
