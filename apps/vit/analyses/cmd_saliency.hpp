#pragma once
#include "cli/opened_model.hpp"
#include "vit/analysis/saliency.hpp"

namespace vit::cli {

// Integrated gradients' baseline: the data's mean image (0 once normalised),
// or black pixels.
enum class SaliencyBaseline { kMean, kBlack };

}  // namespace vit::cli

template <>
struct vit::EnumNames<vit::cli::SaliencyBaseline> {
  static constexpr std::pair<vit::cli::SaliencyBaseline, const char*> table[] = {
      {vit::cli::SaliencyBaseline::kMean, "mean"}, {vit::cli::SaliencyBaseline::kBlack, "black"}};
};

namespace vit::cli {

struct SaliencyOptions {
  CommonOptions common;
  ModelSource model;                // --checkpoint, --config, --out
  std::optional<int64_t> samples;   // --samples N (default analysis.rollout_samples)
  std::vector<std::string> images;  // --images FILE... (instead of --samples)
  SaliencyMethod method = SaliencyMethod::kGradRollout;  // --method
  std::optional<int64_t> target_class;        // --class K (default: each image's predicted class)
  int64_t steps = GradientAveraging{}.steps;  // --steps (integrated-gradients)
  SaliencyBaseline baseline = SaliencyBaseline::kMean;      // --baseline (integrated-gradients)
  double noise = GradientAveraging{}.noise;                 // --noise (smoothgrad)
  int64_t samples_per_image = GradientAveraging{}.samples;  // --samples-per-image (smoothgrad)
};

std::shared_ptr<SaliencyOptions> register_saliency(Cli& cli);
// The command on an opened model (also used by `vit report`): returns saliency.json.
nlohmann::json write_saliency(OpenedModel& opened, const SaliencyOptions& o);

}  // namespace vit::cli
