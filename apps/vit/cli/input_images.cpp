#include "cli/input_images.hpp"

#include <algorithm>
#include <numeric>

#include <spdlog/spdlog.h>
#include <torch/torch.h>

#include "vit/data/image_transform.hpp"
#include "vit/data/rng.hpp"
#include "vit/error.hpp"
#include "vit/io/image_io.hpp"
#include "vit/io/planned_decode.hpp"

namespace vit::cli {

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
  // Each image as evaluation takes it (data.crop_mode, crop_pct, interpolation).
  const EvaluationTransform transform = evaluation_transform(config.data);
  const io::PlanForSize plan = [&](int64_t height, int64_t width) {
    return data::evaluation_plan(transform, height, width, config.model.image_size);
  };
  std::vector<torch::Tensor> images;
  for (const auto& path : paths) {
    const std::vector<uint8_t> bytes = io::read_file_bytes(path);
    images.push_back(
        io::decode_planned(bytes.data(), bytes.size(), config.model.channels, plan, path));
  }
  inputs.pixels = torch::stack(images);  // (B, C, S, S)
  inputs.normalized = normalize_pixels(inputs.pixels, config, device);
  return inputs;
}

// Not CLI::PositiveNumber, which would answer 0 with a range up to 1.8e308.
CLI::Validator at_least_one() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        int64_t value = 0;
        if (!CLI::detail::lexical_cast(text, value) || value < 1)
          return text + " is not a whole number >= 1";
        return "";
      },
      "N >= 1");
}

void add_sample_options(CLI::App& cmd, std::optional<int64_t>& samples,
                        std::vector<std::string>& images, const std::string& verb,
                        const std::string& default_key) {
  auto* sample_option = cmd.add_option("--samples", samples,
                                       "validation images to " + verb +
                                           ", drawn with --seed (default " + default_key + ")")
                            ->check(at_least_one());
  cmd.add_option("--images", images,
                 "image files to " + verb + " instead (any size and channel count)")
      ->check(CLI::ExistingFile)
      ->excludes(sample_option);
}

std::vector<int64_t> choose_samples(int64_t available, int64_t wanted, uint64_t seed) {
  std::vector<int64_t> all(static_cast<size_t>(std::max<int64_t>(available, 0)));
  std::iota(all.begin(), all.end(), 0);
  const auto n = static_cast<size_t>(std::clamp<int64_t>(wanted, 0, available));
  // A partial Fisher-Yates shuffle: the first n entries are a uniform draw.
  data::Rng rng(seed);
  for (size_t i = 0; i < n; ++i)
    std::swap(all[i], all[i + rng.below(all.size() - i)]);
  all.resize(n);
  std::sort(all.begin(), all.end());
  return all;
}

AnalysisInputs choose_analysis_inputs(const std::vector<std::string>& images, int64_t samples,
                                      uint64_t seed, OpenedModel& opened) {
  const Config& config = opened.loaded.config;
  AnalysisInputs inputs;
  if (!images.empty()) {
    inputs.ids = images;
    inputs.pixels = load_image_inputs(images, config, c10::kCPU).pixels;
    return inputs;
  }
  const data::Dataset& val = opened.images(data::SplitName::kVal);
  if (val.size() == 0)
    throw Error(std::string("the validation split of ") + enum_name(config.data.dataset) + " (" +
                config.data.root + ") is empty; set data.val_size > 0 or pass --images");
  if (samples > val.size())
    spdlog::warn("--samples {} but the validation split has only {} images; using all {}", samples,
                 val.size(), val.size());
  const std::vector<int64_t> chosen = choose_samples(val.size(), samples, seed);
  const auto index = torch::tensor(chosen, torch::kLong);
  for (const int64_t i : chosen)
    inputs.ids.push_back("val:" + std::to_string(i));
  inputs.pixels = val.images.index_select(0, index);  // (B, C, S, S)
  inputs.labels = val.labels.index_select(0, index);
  return inputs;
}

std::pair<at::Tensor, at::Tensor> choose_training_images(OpenedModel& opened, int64_t wanted,
                                                         uint64_t seed, const std::string& flag,
                                                         int64_t minimum) {
  const data::Dataset& train = opened.images(data::SplitName::kTrain);
  if (train.size() < minimum)
    throw Error("the training split has " + std::to_string(train.size()) + " images; at least " +
                std::to_string(minimum) + " are needed");
  if (wanted > train.size())
    spdlog::warn("{} {} but the training split has only {} images; using all {}", flag, wanted,
                 train.size(), train.size());
  const auto index = torch::tensor(choose_samples(train.size(), wanted, seed), torch::kLong);
  return {train.images.index_select(0, index), train.labels.index_select(0, index)};
}

int64_t attention_batch_size(const ModelConfig& model, int64_t budget_bytes) {
  const int64_t tokens = model.tokens();
  const int64_t per_image = model.depth * model.heads * tokens * tokens * int64_t{sizeof(float)};
  return std::clamp<int64_t>(budget_bytes / std::max<int64_t>(per_image, 1), 1, 64);
}

void for_each_attention_batch(
    VisionTransformer& model, const at::Tensor& pixels, const Config& config, c10::Device device,
    int64_t batch_size, const std::function<void(int64_t, const LogitsAndAttention&)>& visit) {
  torch::NoGradGuard no_grad;
  const int64_t count = pixels.size(0);
  for (int64_t first = 0; first < count; first += batch_size) {
    const auto batch =
        pixels.slice(/*dim=*/0, first, std::min(first + batch_size, count));  // (b, C, S, S)
    // fp32 whatever the training precision: the maps should not depend on it.
    visit(first, model->forward_with_attention(normalize_pixels(batch, config, device)));
  }
}

ImageBatches image_batches(const at::Tensor& pixels, const Config& config, c10::Device device,
                           int64_t batch_size) {
  ImageBatches batches;
  batches.count = pixels.size(0);
  batches.batch_size = batch_size;
  batches.batch = [pixels, config, device](int64_t first, int64_t size) {
    return normalize_pixels(pixels.narrow(/*dim=*/0, first, size), config, device);
  };
  return batches;
}

}  // namespace vit::cli
