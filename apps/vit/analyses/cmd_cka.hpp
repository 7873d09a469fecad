#pragma once
#include "cli/opened_model.hpp"

namespace vit::cli {

struct CkaOptions {
  CommonOptions common;
  ModelSource model;                   // --checkpoint, --config, --out
  std::optional<int64_t> samples;      // --samples N (default kCkaSamples)
  std::vector<std::string> images;     // --images FILE... (instead of --samples)
  std::optional<std::string> against;  // --against C2: a second checkpoint, same architecture
};

// Validation images CKA compares on by default: enough for a stable estimate
// (Kornblith et al. use a few thousand; the Gram is only n x n).
constexpr int64_t kCkaSamples = 500;

std::shared_ptr<CkaOptions> register_cka(Cli& cli);
// The command on an opened model (also used by `vit report`): returns cka.json.
nlohmann::json write_cka(OpenedModel& opened, const CkaOptions& o);

// Throws vit::Error unless `b` has `a`'s architecture (the number of classes may differ).
void check_same_architecture(const LoadedModel& a, const LoadedModel& b);

// The centred Gram of every layer of `loaded` on `pixels` (uint8 (n, C, S, S)):
// L+1 of (n, n), to compare with another checkpoint's on the same images.
std::vector<at::Tensor> layer_grams_of(LoadedModel& loaded, const at::Tensor& pixels,
                                       c10::Device device);

}  // namespace vit::cli
