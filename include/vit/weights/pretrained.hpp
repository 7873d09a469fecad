#pragma once
// Initialising a model from pretrained weights for fine-tuning
// (`vit train --init`): every tensor whose name and shape match is copied;
// the rest is adapted where the ViT recipe says how, and otherwise left as
// the model initialised it.
//   - pos_embed on another grid: 2-D bicubic resize, class token kept
//     (pos_embed_resize.hpp);
//   - patch_embed.proj.weight with another patch size: FlexiViT's
//     pseudo-inverse resize (patch_embed_resize.hpp); from RGB to gray: the
//     sum over the colour channels, from gray to RGB: a third in each (as
//     timm's adapt_input_conv), so a gray image gives the same tokens;
//   - head with another num_classes (or new_head): zeros, as the ViT paper
//     does for fine-tuning, so training starts from uniform predictions.
// A file whose embedding width differs cannot be adapted and is an error.
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

// The tensors of a vit .pt checkpoint (a zip archive; its own config builds
// the model they come from) or of a .safetensors file (timm's names), on the
// CPU. Throws vit::Error for a file that is neither.
TensorMap read_pretrained_tensors(const std::string& path);

// Fine-tuning from a timm hub folder (or hf-hub:NAME), which names its
// architecture: the folder's architecture with the run's input size, classes
// and regularisation (image_size, num_classes, the dropouts, drop_path) from
// `config`; nullopt for a file, whose architecture the config gives.
std::optional<ModelConfig> pretrained_architecture(const std::string& path,
                                                   const ModelConfig& config);

// Copies `source` into `model` under NoGradGuard, as described above. Errors
// name `source_name`: a width mismatch names both shapes; a source with no
// ViT tensor at all is not a checkpoint; with `strict`, every tensor that
// was re-initialised or left unused is listed.
InitReport init_from_pretrained(VisionTransformer& model, const TensorMap& source,
                                const std::string& source_name, const InitOptions& options = {});

}  // namespace vit
