#pragma once
// Initialising a model from pretrained weights for fine-tuning (`vit train --init`,
// docs/training.md): every tensor whose name and shape match is copied; the rest is
// adapted where the ViT recipe says how, else left as the model initialised it:
//   - pos_embed on another grid: 2-D bicubic resize (pos_embed_resize.hpp);
//   - patch_embed.proj.weight with another patch size: FlexiViT's resize
//     (patch_embed_resize.hpp); RGB to gray: the channels' sum; gray to RGB: a
//     third in each (timm's adapt_input_conv);
//   - head with another num_classes (or new_head): zeros (uniform predictions).
// A file whose embedding width differs is an error.
#include <optional>
#include <string>
#include <vector>

#include "vit/model/vision_transformer.hpp"
#include "vit/weights/safetensors.hpp"

namespace vit {

struct InitOptions {
  bool strict = false;    // every model tensor from the file, every file tensor used
  bool new_head = false;  // zero the head even when num_classes matches (a new task)
};

// What happened to each tensor, one line per tensor, for the log.
struct InitReport {
  std::vector<std::string> loaded;         // copied unchanged, e.g. "blocks.0.norm1.weight"
  std::vector<std::string> adapted;        // "pos_embed: [1, 17, 64] -> [1, 65, 64] (...)"
  std::vector<std::string> reinitialised;  // "head.weight [10, 64] (zeros: ...)"
  std::vector<std::string> unused;         // in the file, not in the model: "fc_norm.weight [64]"
};

// The tensors of a vit .pt checkpoint or a .safetensors file (timm's names), on the
// CPU. Throws vit::Error for a file that is neither.
TensorMap read_pretrained_tensors(const std::string& path);

// For a timm hub folder (or hf-hub:NAME): its architecture with image_size,
// num_classes, the dropouts and drop_path from `config`; nullopt for a file.
std::optional<ModelConfig> pretrained_architecture(const std::string& path,
                                                   const ModelConfig& config);

// Copies `source` into `model` as described above. Errors name `source_name`: a
// width mismatch, a source with no ViT tensor, and with `strict`, every tensor
// re-initialised or left unused.
InitReport init_from_pretrained(VisionTransformer& model, const TensorMap& source,
                                const std::string& source_name, const InitOptions& options = {});

}  // namespace vit
