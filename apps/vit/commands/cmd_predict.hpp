#pragma once
#include "cli/opened_model.hpp"

namespace vit::cli {

struct PredictOptions {
  CommonOptions common;
  ModelSource model;                       // --checkpoint, --config, --out
  std::vector<std::string> images;         // --images FILE...
  int64_t topk = 5;                        // --topk K
  bool json = false;                       // --json
  Precision precision = Precision::kAuto;  // --precision auto|fp32|bf16|fp16
};

std::shared_ptr<PredictOptions> register_predict(Cli& cli);

}  // namespace vit::cli
