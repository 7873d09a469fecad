#pragma once
// What the inference commands share: opening the checkpoint (logging which one
// was used) and turning --images files into the model's input.
#include <optional>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

#include "vit/weights/checkpoint.hpp"

namespace vit::cli {

// --checkpoint or runs/latest/best.pt; --config for timm safetensors files.
// The model comes back in eval mode on `device`.
LoadedModel open_checkpoint(const std::optional<std::string>& checkpoint,
                            const std::optional<std::string>& config_path, c10::Device device);

struct ImageInputs {
  std::vector<std::string> paths;
  at::Tensor pixels;      // uint8 (B, C, S, S): converted to the model's channels and size
  at::Tensor normalized;  // float (B, C, S, S) on the device, ready for the model
};

// Reads each file (any size or channel count), converts it to the model's
// channels, resizes it to model.image_size and normalises with data.mean/std.
ImageInputs load_image_inputs(const std::vector<std::string>& paths, const Config& config,
                              c10::Device device);

// uint8 (B, C, S, S) -> float normalised with the config's mean and std.
at::Tensor normalize_pixels(const at::Tensor& pixels, const Config& config, c10::Device device);

}  // namespace vit::cli
