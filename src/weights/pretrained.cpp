// Shape key: D width, C channels, P patch side, g grid side, K classes.
#include "vit/weights/pretrained.hpp"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>

#include <c10/util/StringUtil.h>
#include <torch/torch.h>

#include "vit/error.hpp"
#include "vit/hf_cache.hpp"
#include "vit/weights/checkpoint.hpp"
#include "vit/weights/patch_embed_resize.hpp"
#include "vit/weights/pos_embed_resize.hpp"
#include "vit/weights/timm_hub.hpp"
#include "vit/weights/timm_layout.hpp"

namespace vit {
namespace {

namespace fs = std::filesystem;

std::string shape_of(const at::Tensor& t) {
  return c10::str(t.sizes());  // "[1, 17, 64]"
}

bool starts_with(const std::string& text, const std::string& prefix) {
  return text.rfind(prefix, 0) == 0;
}

bool is_zip_archive(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  char magic[4] = {};
  in.read(magic, sizeof magic);
  return in.gcount() == 4 && std::string(magic, 4) == std::string("PK\x03\x04", 4);
}

// The tensors whose shape holds the embedding width, and where in it.
struct WidthTensor {
  const char* name;
  int64_t dim;  // index into the shape
};
constexpr WidthTensor kWidthTensors[] = {{"cls_token", 2},
                                         {"pos_embed", 2},
                                         {"reg_token", 2},
                                         {"dist_token", 2},
                                         {"patch_embed.proj.weight", 0}};

// The rows of the file's pos_embed (1, F + g*g, D) before the patches'. A
// square grid and fewer than 2g + 1 prefix rows (the most a timm ViT has is
// a class and a distillation token) make F = N - floor(sqrt(N))^2.
int64_t position_prefix_rows(const TensorMap& source) {
  const auto it = source.find("pos_embed");
  if (it == source.end() || it->second.dim() != 3) return 1;
  const int64_t rows = it->second.size(1);
  auto side = static_cast<int64_t>(std::sqrt(static_cast<double>(rows)));
  while (side * side > rows)
    --side;
  while ((side + 1) * (side + 1) <= rows)
    ++side;
  return rows - side * side;
}

// Fine-tuning keeps the token width: no tensor of another width can be adapted.
void check_embedding_width(const torch::OrderedDict<std::string, at::Tensor>& params,
                           const TensorMap& source, const std::string& source_name) {
  for (const auto& width_tensor : kWidthTensors) {
    const auto it = source.find(width_tensor.name);
    const at::Tensor* mine = params.find(width_tensor.name);
    if (it == source.end() || mine == nullptr) continue;
    const at::Tensor& theirs = it->second;
    const int64_t width = mine->size(width_tensor.dim);
    if (theirs.dim() == mine->dim() && theirs.size(width_tensor.dim) == width) return;
    const std::string file_width =
        theirs.dim() == mine->dim() ? std::to_string(theirs.size(width_tensor.dim)) : "?";
    throw Error(source_name + ": embedding width differs: the file's " + width_tensor.name +
                " is " + shape_of(theirs) + ", the model's is " + shape_of(*mine) + " (model.dim " +
                std::to_string(width) +
                "; fine-tuning keeps the width, so the "
                "config needs model.dim " +
                file_width + ")");
  }
}

void check_is_vit(const torch::OrderedDict<std::string, at::Tensor>& params,
                  const TensorMap& source, const std::string& source_name) {
  for (const auto& [name, tensor] : source)
    if (params.contains(name)) return;
  if (source.empty()) throw Error(source_name + ": not a ViT checkpoint: it holds no tensors");
  throw Error(source_name + ": not a ViT checkpoint: none of its " + std::to_string(source.size()) +
              " tensors has a ViT parameter's name (first: '" + source.begin()->first +
              "'; expected timm's names: patch_embed.proj.weight, cls_token, pos_embed, "
              "blocks.0.attn.qkv.weight, ..., head.weight)");
}

// RGB -> gray sums the colour channels and gray -> RGB gives each a third, so
// that a gray image (R = G = B) is embedded as before (timm's adapt_input_conv).
at::Tensor adapt_channels(const at::Tensor& kernel, int64_t channels) {  // (D, C, P, P)
  const int64_t from = kernel.size(1);
  if (from == channels) return kernel;
  if (channels == 1) return kernel.sum(/*dim=*/1, /*keepdim=*/true);            // (D, 1, P, P)
  if (from == 1) return kernel.repeat({1, channels, 1, 1}) / double(channels);  // (D, C, P, P)
  throw Error("patch_embed.proj.weight: cannot adapt " + std::to_string(from) +
              " input channels to " + std::to_string(channels));
}

// One decision per model parameter, made before anything is copied, so a
// failure leaves the model untouched.
struct Plan {
  // pos_embed's rows before the patches: the model's, and the file's (0 where
  // it has registers, as timm's register models).
  int64_t model_prefix_rows = 1, file_prefix_rows = 1;
  std::vector<std::pair<at::Tensor, at::Tensor>> copies;  // (parameter, value)
  std::vector<at::Tensor> zeros;
  std::vector<std::string> mismatches;  // what init_strict rejects
  InitReport report;
};

// pos_embed and the patch kernel of another grid or patch: the adapted tensor,
// or an undefined one when the shape cannot be adapted.
at::Tensor adapted(const std::string& name, const at::Tensor& mine, const at::Tensor& theirs,
                   const Plan& plan, std::string& how) {
  if (name == "pos_embed" && theirs.dim() == 3 && theirs.size(2) == mine.size(2)) {
    // A class token's position and none (a register model's) do not convert.
    if (plan.file_prefix_rows != plan.model_prefix_rows) return {};
    const int64_t from = pos_embed_grid(theirs, plan.file_prefix_rows),
                  to = pos_embed_grid(mine, plan.model_prefix_rows);
    how = "grid " + std::to_string(from) + "x" + std::to_string(from) + " -> " +
          std::to_string(to) + "x" + std::to_string(to) + ", 2-D bicubic interpolation" +
          (plan.model_prefix_rows == 1 ? ", class token kept" : "");
    return resize_pos_embed(theirs, to, plan.model_prefix_rows);
  }
  if (name == "patch_embed.proj.weight" && theirs.dim() == 4 && theirs.size(2) == theirs.size(3)) {
    std::vector<std::string> steps;
    if (theirs.size(1) != mine.size(1))
      steps.push_back(std::to_string(theirs.size(1)) + " -> " + std::to_string(mine.size(1)) +
                      " channels, as timm's adapt_input_conv");
    if (theirs.size(2) != mine.size(2))
      steps.push_back("patch " + std::to_string(theirs.size(2)) + " -> " +
                      std::to_string(mine.size(2)) + ", FlexiViT pseudo-inverse resize");
    how = steps.empty() ? "" : steps.front() + (steps.size() > 1 ? "; " + steps.back() : "");
    return resize_patch_kernel(adapt_channels(theirs.to(torch::kFloat), mine.size(1)),
                               mine.size(2));
  }
  return {};
}

void plan_parameter(const std::string& name, const at::Tensor& mine, const TensorMap& source,
                    const InitOptions& options, Plan& plan) {
  const auto it = source.find(name);
  const bool head = starts_with(name, "head.") || starts_with(name, "head_dist.");
  if (head && options.new_head) {
    plan.zeros.push_back(mine);
    plan.report.reinitialised.push_back(name + " " + shape_of(mine) +
                                        " (zeros: a new head, train.init_new_head)");
    return;
  }
  if (it == source.end() && head) {  // a headless export (timm num_classes=0)
    plan.zeros.push_back(mine);
    plan.report.reinitialised.push_back(name + " " + shape_of(mine) + " (zeros: not in the file)");
    plan.mismatches.push_back(plan.report.reinitialised.back());
    return;
  }
  if (it == source.end()) {
    plan.report.reinitialised.push_back(name + " " + shape_of(mine) +
                                        " (not in the file; initialised as from scratch)");
    plan.mismatches.push_back(plan.report.reinitialised.back());
    return;
  }
  const at::Tensor& theirs = it->second;
  if (!at::isFloatingType(theirs.scalar_type())) {
    plan.report.reinitialised.push_back(name + " " + shape_of(mine) + " (the file's is " +
                                        std::string(c10::toString(theirs.scalar_type())) +
                                        ", not floating point; initialised as from scratch)");
    plan.mismatches.push_back(plan.report.reinitialised.back());
    return;
  }
  if (theirs.sizes() == mine.sizes()) {
    plan.copies.emplace_back(mine, theirs);
    plan.report.loaded.push_back(name);
    return;
  }
  if (head) {
    plan.zeros.push_back(mine);
    plan.report.reinitialised.push_back(name + " " + shape_of(mine) + " (zeros: the file's is " +
                                        shape_of(theirs) + ", another number of classes)");
    plan.mismatches.push_back(plan.report.reinitialised.back());
    return;
  }
  std::string how;
  const at::Tensor value = adapted(name, mine, theirs, plan, how);
  if (value.defined() && value.sizes() == mine.sizes()) {
    plan.copies.emplace_back(mine, value);
    plan.report.adapted.push_back(name + ": " + shape_of(theirs) + " -> " + shape_of(mine) + " (" +
                                  how + ")");
    return;
  }
  plan.report.reinitialised.push_back(name + " " + shape_of(mine) + " (the file's is " +
                                      shape_of(theirs) + "; initialised as from scratch)");
  plan.mismatches.push_back(plan.report.reinitialised.back());
}

}  // namespace

TensorMap read_pretrained_tensors(const std::string& path) {
  if (is_hf_hub_name(path)) return read_pretrained_tensors(resolve_hf_hub(path));
  if (fs::is_directory(path)) return read_safetensors(read_timm_hub_folder(path).weights).tensors;
  if (!fs::is_regular_file(path)) throw Error(path + ": weights file not found");
  if (fs::path(path).extension() == ".safetensors") return read_safetensors(path).tensors;
  if (!is_zip_archive(path))
    throw Error(path +
                ": not a checkpoint (expected a vit .pt checkpoint, which is a zip archive, or a "
                "timm .safetensors file)");
  return state_tensors(load_model(path).model);
}

std::optional<ModelConfig> pretrained_architecture(const std::string& path,
                                                   const ModelConfig& config) {
  const bool hub = is_hf_hub_name(path) || fs::is_directory(path);
  if (!hub) return std::nullopt;
  ModelConfig m =
      read_timm_hub_folder(is_hf_hub_name(path) ? resolve_hf_hub(path) : path).config.model;
  m.image_size = config.image_size;
  m.num_classes = config.num_classes;
  m.dropout = config.dropout;
  m.emb_dropout = config.emb_dropout;
  m.attn_dropout = config.attn_dropout;
  m.drop_path = config.drop_path;
  return m;
}

// Under NoGradGuard. pos_embed's resize keeps the class token's row; the patch
// embedding's resize is FlexiViT's pseudo-inverse one, and its channel adaptation
// makes a gray image give the same tokens. A new head is zero, as the ViT paper does
// for fine-tuning, so training starts from uniform predictions.
InitReport init_from_pretrained(VisionTransformer& model, const TensorMap& source,
                                const std::string& source_name, const InitOptions& options) {
  const auto params = model->named_parameters();
  check_is_vit(params, source, source_name);
  check_embedding_width(params, source, source_name);
  Plan plan;
  plan.model_prefix_rows = model->config().embedded_prefix();
  plan.file_prefix_rows = position_prefix_rows(source);
  for (const auto& p : params)
    plan_parameter(p.key(), p.value(), source, options, plan);
  for (const auto& [name, tensor] : source) {
    if (params.contains(name)) continue;
    plan.report.unused.push_back(name + " " + shape_of(tensor));
    plan.mismatches.push_back(name + " " + shape_of(tensor) + " (in the file, not in the model)");
  }
  if (options.strict && !plan.mismatches.empty())
    throw Error(source_name + ": train.init_strict is set and " +
                std::to_string(plan.mismatches.size()) + " tensor" +
                (plan.mismatches.size() == 1 ? " does" : "s do") +
                " not load as they are: " + c10::Join("; ", plan.mismatches));
  torch::NoGradGuard no_grad;
  for (auto& [parameter, value] : plan.copies)
    parameter.copy_(value);
  for (auto& parameter : plan.zeros)
    parameter.zero_();
  return plan.report;
}

}  // namespace vit
