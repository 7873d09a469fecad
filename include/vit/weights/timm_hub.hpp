#pragma once
// A timm hub folder as a checkpoint: config.json (the architecture's name,
// model_args, pretrained_cfg) beside model.safetensors, as `huggingface-cli download
// timm/NAME` and timm's save_for_hf write it. The architectures vit builds are one
// table, generated from timm (scripts/timm_architectures.py).
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "vit/config.hpp"
#include "vit/model/vision_transformer.hpp"

namespace vit {

struct TimmHubFolder {
  std::string architecture;  // config.json's "architecture"
  Config config;             // the model and the preprocessing (data.mean, std, crop_pct)
  std::string weights;       // folder/model.safetensors
};

// Reads folder/config.json; throws a one-line vit::Error naming the file, the key
// and what was expected (for an unknown architecture, the closest known ones).
TimmHubFolder read_timm_hub_folder(const std::string& folder);

// The architecture `name` as timm builds it (no model_args); throws for an unknown one.
ModelConfig timm_architecture(const std::string& name);

// The family a model's options make (docs/models.md): "ViT", "DeiT III", "CLIP", ...,
// or "ViT with options" for another mix.
std::string model_family(const ModelConfig& m);

std::vector<std::string> timm_architecture_names();  // in the table's order

// The config.json of `config`'s model for timm: an architecture (the config's name
// when it is one), model_args with every option, and pretrained_cfg. Throws where
// timm has no such model (a patch bias that differs from !pre_norm, dim_head *
// heads != dim).
nlohmann::json timm_hub_config(const Config& config);

// Writes folder/config.json and folder/model.safetensors (float32, with vit's config
// and class names), each atomically, for timm.create_model("local-dir:FOLDER",
// pretrained=True).
void write_timm_hub_folder(const std::string& folder, const VisionTransformer& model,
                           const Config& config, const std::vector<std::string>& class_names);

}  // namespace vit
