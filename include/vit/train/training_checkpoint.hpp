#pragma once
// Training checkpoints (best.pt, last.pt): the model, the optimizer state, the
// CPU random generator and CheckpointMeta (weights/checkpoint.hpp), written
// atomically. weights/checkpoint.hpp reads the model part for inference.
#include <string>

#include "vit/train/optimizer.hpp"
#include "vit/weights/checkpoint.hpp"

namespace vit {

void save_training_checkpoint(const std::string& path, VisionTransformer& model,
                              const Optimizer& optimizer, const CheckpointMeta& meta);

// The metadata alone (config, step, ...), to rebuild the model before restoring.
CheckpointMeta read_checkpoint_meta(const std::string& path);

// Restores the weights (in place, so the optimizer's flat buffers keep them),
// the optimizer state and the CPU generator into objects built from the
// checkpoint's own config. Throws if the architecture of
// `model` differs from the checkpoint's.
CheckpointMeta restore_training_checkpoint(const std::string& path, VisionTransformer& model,
                                           Optimizer& optimizer);

}  // namespace vit
