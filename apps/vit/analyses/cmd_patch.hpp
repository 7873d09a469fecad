#pragma once
#include "cli/opened_model.hpp"
#include "vit/analysis/activation_patching.hpp"

namespace vit::cli {

struct PatchOptions {
  CommonOptions common;
  ModelSource model;                              // --checkpoint, --config, --out
  std::optional<std::string> clean, corrupt;      // --clean IMG --corrupt IMG
  int64_t pairs = 16;                             // --pairs N from the validation split
  PatchMethod method = PatchMethod::kActivation;  // --method activation|attribution|both
};

std::shared_ptr<PatchOptions> register_patch(Cli& cli);
// The command on an opened model: returns patch.json.
nlohmann::json write_patch(OpenedModel& opened, const PatchOptions& o);

}  // namespace vit::cli
