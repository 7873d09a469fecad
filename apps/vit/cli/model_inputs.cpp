#include "cli/model_inputs.hpp"

#include <spdlog/spdlog.h>
#include <torch/torch.h>

#include "vit/io/image_io.hpp"

namespace vit::cli {

LoadedModel open_checkpoint(const std::optional<std::string>& checkpoint,
                            const std::optional<std::string>& config_path, c10::Device device) {
  const std::string path = resolve_checkpoint_path(checkpoint);
  spdlog::info("using checkpoint {}", path);
  LoadedModel loaded = load_model(path, config_path);
  loaded.model->to(device);
  loaded.model->eval();
  return loaded;
}

at::Tensor normalize_pixels(const at::Tensor& pixels, const Config& config, c10::Device device) {
  const auto channels = pixels.size(1);
  const auto options = torch::TensorOptions().dtype(torch::kFloat).device(device);
  const auto mean = torch::tensor(config.data.mean, options.dtype(torch::kDouble))
                        .to(options)
                        .view({1, channels, 1, 1});
  const auto std = torch::tensor(config.data.std, options.dtype(torch::kDouble))
                       .to(options)
                       .view({1, channels, 1, 1});
  return (pixels.to(device).to(torch::kFloat) / 255.0 - mean) / std;  // (B, C, S, S)
}

ImageInputs load_image_inputs(const std::vector<std::string>& paths, const Config& config,
                              c10::Device device) {
  ImageInputs inputs;
  inputs.paths = paths;
  std::vector<torch::Tensor> images;
  for (const auto& path : paths)
    images.push_back(io::read_image(path, config.model.channels, config.model.image_size));
  inputs.pixels = torch::stack(images);  // (B, C, S, S)
  inputs.normalized = normalize_pixels(inputs.pixels, config, device);
  return inputs;
}

}  // namespace vit::cli
