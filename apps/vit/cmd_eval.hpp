#pragma once
#include "model_source.hpp"

namespace vit::cli {

struct EvalOptions {
  CommonOptions common;
  ModelSource model;               // --checkpoint, --config, --out
  std::string split = "test";      // --split val|test
  std::string precision = "auto";  // --precision auto|fp32|bf16|fp16
};

std::shared_ptr<EvalOptions> register_eval(Cli& cli);
// The command on an opened model (also used by `vit report`): returns metrics.json.
nlohmann::json write_eval(OpenedModel& opened, const EvalOptions& o);

}  // namespace vit::cli
