#pragma once
#include <optional>
#include <string>

#include "cli/opened_model.hpp"
#include "vit/analysis/sparse_autoencoder.hpp"

namespace vit::cli {

inline constexpr int64_t kDefaultK = 32;

struct SaeTrainOptions {
  CommonOptions common;
  ModelSource model;                // --checkpoint, --config, --out (default: sae/ beside it)
  int64_t layer = 0;                // --layer L: 0 the embeddings, l after block l
  std::optional<int64_t> features;  // --features F (default 8 x the model's width)
  std::optional<int64_t> k;         // --k: a TopK SAE (default kDefaultK)
  std::optional<double> l1;         // --l1 X: a ReLU SAE with this L1 penalty instead
  int64_t tokens = 262'144;         // --tokens N training patch tokens
  int64_t epochs = 10;              // --epochs E
  double lr = 1e-3;                 // --lr X
  SaeOptimizer optimizer = SaeOptimizer::kAdam;  // --optimizer adam|sgd
  std::optional<int64_t> samples;   // --samples N validation images (default kLayerSamples)
  std::optional<std::string> init;  // --init FILE: go on from this SAE (its features, k, b_dec)
};

struct SaeFeaturesOptions {
  CommonOptions common;
  ModelSource model;               // --checkpoint, --config, --out (default: the SAE's folder)
  std::optional<std::string> sae;  // --sae FILE (default sae/sae.safetensors beside the checkpoint)
  int64_t top = 16;                // --top N features, the most frequent
  int64_t examples = 8;            // --examples M images a feature
  std::optional<int64_t> samples;  // --samples N validation images (default kLayerSamples)
};

// `vit sae train` and `vit sae features`.
void register_sae(Cli& cli);
// The commands on an opened model: they return sae.json and features.json
// (`vit report` runs the second on a run's sae/sae.safetensors).
nlohmann::json write_sae_train(OpenedModel& opened, const SaeTrainOptions& o);
nlohmann::json write_sae_features(OpenedModel& opened, const SaeFeaturesOptions& o);

// Where `vit sae train` writes by default, and `vit sae features` and `vit
// report` look: sae/sae.safetensors beside the checkpoint.
std::filesystem::path default_sae_file(const LoadedModel& loaded);

}  // namespace vit::cli
