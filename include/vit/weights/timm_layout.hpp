#pragma once
// Weights in timm's layout <-> our VisionTransformer. The model's parameter
// names are timm's, so a name -> tensor map is the whole format; this file
// adds the checks that make a wrong file fail loudly and by name.
#include <optional>
#include <string>
#include <vector>

#include "vit/config.hpp"
#include "vit/model/vision_transformer.hpp"
#include "vit/weights/safetensors.hpp"

namespace vit {

struct LoadReport {
  // timm tensors skipped because they are exactly identity in our model,
  // e.g. "blocks.0.ls1.gamma" (LayerScale with every gamma 1).
  std::vector<std::string> ignored_identity;
};

// Copies every parameter of `model` from `state` by name, converting dtype and
// device, under NoGradGuard. Nothing is copied unless everything fits: one
// vit::Error, opened by `source_name`, lists every missing key, unexpected
// key, shape mismatch (`blocks.3.attn.qkv.weight: expected [768, 256], file
// has [384, 128]`), non-float tensor and timm layer our architecture lacks
// (norm_pre, fc_norm, dist_token, attn_pool, q_norm/k_norm,
// LayerScale with gamma != 1, ...). Parameter-free timm layers such as
// head_drop never appear in a state dict and need nothing.
LoadReport load_weights(VisionTransformer& model, const TensorMap& state,
                        const std::string& source_name);

// The model's parameters under their timm names: CPU, contiguous float32 copies.
TensorMap state_tensors(const VisionTransformer& model);

// The __metadata__ of our exports: "format": "pt" (what huggingface's loaders
// look for), "vit_config": the resolved config as JSON and, when given,
// "class_names": the label order as a JSON array of strings.
StringMap export_metadata(const Config& config, const std::vector<std::string>& class_names = {});
// The validated config in __metadata__["vit_config"]; nullopt when the file
// has none (a plain timm file: the architecture must come from --config).
std::optional<Config> config_from_metadata(const StringMap& metadata,
                                           const std::string& source_name);

// The label order in __metadata__["class_names"]; nullopt when the file has
// none. Throws vit::Error unless it is a JSON array of `num_classes` strings.
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
