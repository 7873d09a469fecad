#pragma once
// Weights in timm's layout <-> our VisionTransformer. The parameter names are timm's,
// so a name -> tensor map is the whole format; a wrong file fails loudly, by name.
#include <optional>
#include <string>
#include <vector>

#include "vit/config.hpp"
#include "vit/model/vision_transformer.hpp"
#include "vit/weights/safetensors.hpp"

namespace vit {

struct LoadReport {
  // timm tensors that are exactly identity here: "blocks.0.ls1.gamma" all ones.
  std::vector<std::string> ignored_identity;
};

// Copies every parameter of `model` from `state` by name, converting dtype and
// device. Nothing is copied unless everything fits: one vit::Error, opened by
// `source_name`, lists every missing or unexpected key, shape mismatch, non-float
// tensor and timm layer our architecture lacks (q_norm/k_norm, ...).
LoadReport load_weights(VisionTransformer& model, const TensorMap& state,
                        const std::string& source_name);

// The model's parameters under their timm names: CPU, contiguous float32 copies.
TensorMap state_tensors(const VisionTransformer& model);

// The __metadata__ of our exports: "format": "pt" (for huggingface's loaders),
// "vit_config": the resolved config as JSON, and "class_names" as a JSON array.
StringMap export_metadata(const Config& config, const std::vector<std::string>& class_names = {});
// The validated config in __metadata__["vit_config"]; nullopt for a plain timm file.
std::optional<Config> config_from_metadata(const StringMap& metadata,
                                           const std::string& source_name);

// __metadata__["class_names"]; nullopt when absent. Throws vit::Error unless it is a
// JSON array of `num_classes` strings.
std::optional<std::vector<std::string>> class_names_from_metadata(const StringMap& metadata,
                                                                  int64_t num_classes,
                                                                  const std::string& source_name);

// write_safetensors(path, state_tensors(model), export_metadata(config, class_names)).
void save_safetensors_weights(const std::string& path, const VisionTransformer& model,
                              const Config& config,
                              const std::vector<std::string>& class_names = {});
// read_safetensors(path), then load_weights.
LoadReport load_safetensors_weights(VisionTransformer& model, const std::string& path);

}  // namespace vit
