#pragma once
#include "cli/opened_model.hpp"

namespace vit::cli {

// The splits `vit eval` reads.
enum class EvalSplit { kVal, kTest };

struct EvalOptions {
  CommonOptions common;
  ModelSource model;                       // --checkpoint, --config, --out
  EvalSplit split = EvalSplit::kTest;      // --split val|test
  Precision precision = Precision::kAuto;  // --precision auto|fp32|bf16|fp16
};

std::shared_ptr<EvalOptions> register_eval(Cli& cli);
// The command on an opened model (also used by `vit report`): returns metrics.json.
nlohmann::json write_eval(OpenedModel& opened, const EvalOptions& o);

}  // namespace vit::cli

template <>
struct vit::EnumNames<vit::cli::EvalSplit> {
  static constexpr std::pair<vit::cli::EvalSplit, const char*> table[] = {
      {vit::cli::EvalSplit::kVal, "val"}, {vit::cli::EvalSplit::kTest, "test"}};
};
