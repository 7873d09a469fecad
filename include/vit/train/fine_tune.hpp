#pragma once
// The fine-tuning recipe's knobs (train.init, train.freeze, train.layer_decay,
// train.head_lr_scale) as functions of the parameter names. Layers as in BEiT and
// timm's param_groups_layer_decay: 0 is the embeddings, i + 1 is blocks.i, and
// L + 1 the final norm and the head (L = model.depth).
#include <string>
#include <vector>

#include "vit/config.hpp"
#include "vit/model/vision_transformer.hpp"
#include "vit/weights/pretrained.hpp"

namespace vit {

// 0..depth + 1, by its timm name.
int64_t layer_index(const std::string& name, int64_t depth);

// The parameter's learning rate as a multiple of the schedule's:
// layer_decay^(depth + 1 - layer), times head_lr_scale for the head.
double lr_scale(const std::string& name, int64_t depth, const TrainConfig& train);

// Whether train.freeze keeps the parameter fixed.
bool is_frozen(const std::string& name, int64_t depth, const TrainConfig& train);

// Sets requires_grad(false) on the frozen parameters; their names, in order.
std::vector<std::string> freeze_parameters(VisionTransformer& model, const TrainConfig& train);

// Loads train.init into `model` and logs what was loaded, adapted, re-initialised
// and left unused.
InitReport init_from_file(VisionTransformer& model, const TrainConfig& train);

}  // namespace vit
