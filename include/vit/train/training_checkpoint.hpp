#pragma once
// Training checkpoints (best.pt, last.pt): the model, the optimizer state, the
// weights' average (train.ema, under "model_ema"), the CPU random generator
// and CheckpointMeta (weights/checkpoint.hpp), written atomically. weights/checkpoint.hpp reads the
// model part for inference.
#include <string>

#include "vit/train/optimizer.hpp"
#include "vit/weights/checkpoint.hpp"

namespace vit {

class ModelEma;

// `ema`: the weights' average, or null.
void save_training_checkpoint(const std::string& path, VisionTransformer& model,
                              const Optimizer& optimizer, const CheckpointMeta& meta,
                              const ModelEma* ema = nullptr);

// The metadata alone (config, step, ...), to rebuild the model before restoring.
CheckpointMeta read_checkpoint_meta(const std::string& path);

// Restores the weights (in place, so the optimizer's flat buffers keep them),
// the optimizer state and the CPU generator into objects built from the
// checkpoint's own config. Throws if the architecture of
// `model` differs from the checkpoint's.
// `ema`, where given, takes the checkpoint's average, or starts again from the
// restored weights when the checkpoint has none.
CheckpointMeta restore_training_checkpoint(const std::string& path, VisionTransformer& model,
                                           Optimizer& optimizer, ModelEma* ema = nullptr);

}  // namespace vit
