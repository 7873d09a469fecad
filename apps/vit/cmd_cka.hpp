#pragma once
#include "model_source.hpp"

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

// The CKA of every layer of `opened` with the same layer of `other` (the
// diagonal of their matrix), on `samples` validation images of opened's data
// drawn with `seed`: how far each layer is from the other model's.
std::vector<double> cka_same_layers(OpenedModel& opened, LoadedModel& other, int64_t samples,
                                    uint64_t seed);

}  // namespace vit::cli
