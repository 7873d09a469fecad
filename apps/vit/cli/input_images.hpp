#pragma once
// The images a command reads: --images files, or --samples N validation images drawn
// with the seed, and a batched forward_with_attention over them, so that many images
// of a big model never hold all their attention maps at once.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>
#include <CLI/CLI.hpp>

#include "cli/opened_model.hpp"
#include "vit/analysis/image_batches.hpp"
#include "vit/config.hpp"
#include "vit/model/vision_transformer.hpp"

namespace vit::cli {

// Validation images the layer-by-layer analyses (lens, probe, ablate, the report's
// snapshots) read by default: a stable accuracy per layer in a second or two.
constexpr int64_t kLayerSamples = 1000;

struct ImageInputs {
  std::vector<std::string> paths;
  at::Tensor pixels;      // uint8 (B, C, S, S): converted to the model's channels and size
  at::Tensor normalized;  // float (B, C, S, S) on the device, ready for the model
};

// Reads files of any size or channel count as the model's normalised input.
ImageInputs load_image_inputs(const std::vector<std::string>& paths, const Config& config,
                              c10::Device device);

// uint8 (B, C, S, S) -> float normalised with the config's mean and std.
at::Tensor normalize_pixels(const at::Tensor& pixels, const Config& config, c10::Device device);

struct AnalysisInputs {
  std::vector<std::string> ids;  // the file's path, or "val:I" for image I of the validation split
  at::Tensor pixels;  // uint8 (B, C, S, S) on the CPU, converted to the model's channels and size
  at::Tensor labels;  // int64 (B), the true classes; undefined for --images
};

CLI::Validator at_least_one();  // --samples: a whole number of at least 1

// --samples N | --images FILE..., excluding each other; `verb` and `default_key`
// go into their help.
void add_sample_options(CLI::App& cmd, std::optional<int64_t>& samples,
                        std::vector<std::string>& images, const std::string& verb,
                        const std::string& default_key);

// `wanted` distinct indices of [0, available), increasing, drawn with `seed` (the
// same on every platform); all of them when wanted >= available.
std::vector<int64_t> choose_samples(int64_t available, int64_t wanted, uint64_t seed);

// The --images files when any are given, else `samples` validation images (fewer,
// with a warning, if the split is smaller). Throws vit::Error when the files cannot
// be read or the split is empty.
AnalysisInputs choose_analysis_inputs(const std::vector<std::string>& images, int64_t samples,
                                      uint64_t seed, OpenedModel& opened);

// `wanted` training images (fewer, with a warning naming `flag`, if the split is
// smaller) drawn with `seed`: uint8 pixels and int64 labels on the CPU. Throws
// vit::Error when the split has fewer than `minimum` images.
std::pair<at::Tensor, at::Tensor> choose_training_images(OpenedModel& opened, int64_t wanted,
                                                         uint64_t seed, const std::string& flag,
                                                         int64_t minimum = 1);

// Images per forward_with_attention batch whose attention maps, (L, H, N, N) float
// per image, fit `budget_bytes`; 1 to 64.
int64_t attention_batch_size(const ModelConfig& model, int64_t budget_bytes = int64_t{256} << 20);

// Runs the model with attention over `pixels`, `batch_size` images at a time without
// gradients, and calls visit(first image index, result) for each batch.
void for_each_attention_batch(VisionTransformer& model, const at::Tensor& pixels,
                              const Config& config, c10::Device device, int64_t batch_size,
                              const std::function<void(int64_t, const LogitsAndAttention&)>& visit);

// `pixels` (uint8 (n, C, S, S) on the CPU) normalised in fp32 on `device`,
// `batch_size` images at a time.
ImageBatches image_batches(const at::Tensor& pixels, const Config& config, c10::Device device,
                           int64_t batch_size);

}  // namespace vit::cli
