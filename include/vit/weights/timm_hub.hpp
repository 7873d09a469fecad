#pragma once
// A timm hub folder as a checkpoint: config.json (the architecture's name,
// model_args that override its defaults, pretrained_cfg with the
// preprocessing) beside model.safetensors, as `huggingface-cli download
// timm/NAME` and timm's save_for_hf write it. The architectures vit builds
// are one table, generated from timm (scripts/timm_architectures.py).
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

// Reads folder/config.json; throws vit::Error with one line naming the file,
// the key and what was expected (an unknown architecture names the closest
// known ones; a folder with pytorch_model.bin alone says how to convert it).
TimmHubFolder read_timm_hub_folder(const std::string& folder);

// The architectures' config as timm builds them (no model_args), for `name`;
// throws for an unknown name.
ModelConfig timm_architecture(const std::string& name);

// The family a model's options make (docs/models.md): "ViT", "DeiT
// distilled", "DeiT III", "DINOv2", "DINOv2 with registers", "CLIP",
// "SigLIP", "timm register model", or "ViT with options" for another mix.
std::string model_family(const ModelConfig& m);

// Every architecture of the table, in its order.
std::vector<std::string> timm_architecture_names();

// The config.json of `config`'s model for timm: the architecture (the
// config's name when it is one, else the first of the table that timm can
// turn into this model through model_args), model_args with every option,
// and pretrained_cfg with the preprocessing. Throws where timm has no such
// model (a patch bias that differs from !pre_norm, dim_head * heads != dim).
nlohmann::json timm_hub_config(const Config& config);

// Writes folder/config.json and folder/model.safetensors (timm's names,
// float32, vit's config and the class names in its metadata), each
// atomically, creating the folder; what timm opens with
// timm.create_model("local-dir:FOLDER", pretrained=True).
void write_timm_hub_folder(const std::string& folder, const VisionTransformer& model,
                           const Config& config, const std::vector<std::string>& class_names);

}  // namespace vit
