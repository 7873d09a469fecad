#include "vit/weights/checkpoint.hpp"

#include <filesystem>
#include <set>

#include <torch/torch.h>
#include <nlohmann/json.hpp>

#include "vit/error.hpp"
#include "vit/hf_cache.hpp"
#include "vit/weights/safetensors.hpp"
#include "vit/weights/timm_hub.hpp"
#include "vit/weights/timm_layout.hpp"
#include "vit/weights/zip_check.hpp"

namespace vit {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// A damaged or hostile config can describe a model of any size up to the
// validate() caps (terabytes). The file must hold every parameter, at least
// `bytes_per_parameter` bytes each, so a config that needs more is refused
// before the model is built.
void check_model_fits_file(const ModelConfig& model, const std::string& path,
                           uint64_t bytes_per_parameter) {
  std::error_code ec;
  const uint64_t file_size = fs::file_size(path, ec);
  if (ec) throw Error(path + ": cannot read its size (" + ec.message() + ")");
  const auto parameters = static_cast<uint64_t>(count_parameters(model));
  if (parameters > file_size / bytes_per_parameter) {
    throw Error(path + ": its config describes a model of " + std::to_string(parameters) +
                " parameters, which cannot fit in the file's " + std::to_string(file_size) +
                " bytes (" + std::to_string(bytes_per_parameter) + " byte" +
                (bytes_per_parameter > 1 ? "s" : "") + " or more each)");
  }
}

// `weights_key`: the model's weights, or the average's (kModelEmaKey).
LoadedModel load_pt(const std::string& path, const std::optional<std::string>& config_path,
                    const char* weights_key = kModelKey) {
  torch::serialize::InputArchive archive = open_checkpoint_archive(path);
  const CheckpointMeta meta = read_meta_record(archive, path);
  if (config_path) {
    const auto diffs = architecture_differences(load_config(*config_path).model, meta.config.model);
    if (!diffs.empty())
      throw Error(path + ": architecture differs from " + *config_path + " (" + diffs.front() +
                  ")");
  }
  check_model_fits_file(meta.config.model, path, /*bytes_per_parameter=*/4);  // float32
  LoadedModel loaded{VisionTransformer(meta.config.model, WeightInit::kFromFile), meta.config,
                     meta.class_names, path};
  torch::serialize::InputArchive model_archive;
  if (weights_key != kModelKey && !archive.try_read(weights_key, model_archive))
    throw Error(path + ": holds no average of the weights (its run trained without train.ema)");
  try {
    if (weights_key == kModelKey) archive.read(kModelKey, model_archive);
    loaded.model->load(model_archive);
  } catch (const std::exception& e) {
    throw Error(path + ": damaged model weights (" + first_line_of(e) + ")");
  }
  // Module::load swaps tensors in without a shape check; verify them here.
  const VisionTransformer reference(meta.config.model);
  const auto expected = reference->named_parameters();
  for (const auto& p : loaded.model->named_parameters()) {
    const auto& want = expected[p.key()];
    if (p.value().sizes() != want.sizes())
      throw Error(path + ": " + p.key() + ": expected " + c10::str(want.sizes()) + ", file has " +
                  c10::str(p.value().sizes()));
  }
  return loaded;
}

// Like a .pt file, a file that holds its config wins; --config must then
// describe the same tensors. A plain timm file has only --config to go by.
Config safetensors_config(const std::string& path, const StringMap& metadata,
                          const std::optional<std::string>& config_path) {
  const std::optional<Config> from_file = config_from_metadata(metadata, path);
  if (!config_path) {
    if (from_file) return *from_file;
    throw Error(
        path +
        ": no __metadata__[\"vit_config\"] to give the architecture (a plain timm file); "
        "pass --config FILE, e.g. configs/vit-base-patch16-224.json for vit_base_patch16_224");
  }
  const Config given = load_config(*config_path);
  if (!from_file) return given;
  const auto diffs = architecture_differences(given.model, from_file->model);
  if (!diffs.empty())
    throw Error(path + ": architecture differs from " + *config_path + " (" + diffs.front() + ")");
  return *from_file;
}

// Class names in label order; plain timm files have none, so indices stand in.
std::vector<std::string> safetensors_class_names(const StringMap& metadata, int64_t num_classes,
                                                 const std::string& path) {
  if (auto names = class_names_from_metadata(metadata, num_classes, path)) return *names;
  std::vector<std::string> indices;
  for (int64_t i = 0; i < num_classes; ++i)
    indices.push_back(std::to_string(i));
  return indices;
}

LoadedModel load_safetensors_model(const std::string& path,
                                   const std::optional<std::string>& config_path) {
  const SafetensorsContents contents = read_safetensors(path);
  const Config config = safetensors_config(path, contents.metadata, config_path);
  check_model_fits_file(config.model, path, /*bytes_per_parameter=*/1);  // any dtype
  LoadedModel loaded{VisionTransformer(config.model, WeightInit::kFromFile), config,
                     safetensors_class_names(contents.metadata, config.model.num_classes, path),
                     path};
  load_weights(loaded.model, contents.tensors, path);
  loaded.model->eval();
  return loaded;
}

}  // namespace

torch::serialize::InputArchive open_checkpoint_archive(const std::string& path) {
  if (const auto problem = zip_archive_problem(path))
    throw Error(path + ": not a readable vit checkpoint (" + *problem + ")");
  torch::serialize::InputArchive archive;
  try {
    archive.load_from(path);
  } catch (const std::exception& e) {  // c10::Error, and others from its TorchScript importer
    throw Error(path + ": not a readable vit checkpoint (" + first_line_of(e) + ")");
  }
  return archive;
}

CheckpointMeta read_meta_record(torch::serialize::InputArchive& archive, const std::string& path) {
  c10::IValue meta;
  if (!archive.try_read(kMetaKey, meta) || !meta.isString())
    throw Error(path + ": not a vit checkpoint (no '" + std::string(kMetaKey) + "' record)");
  return meta_from_json(meta.toStringRef(), path);
}

// Fields that fix the tensors' shapes; a config that differs in any of them
// describes another architecture.
std::vector<std::string> architecture_differences(const ModelConfig& a, const ModelConfig& b) {
  std::vector<std::string> diffs;
  const auto check = [&](const char* name, auto x, auto y) {
    if (x != y)
      diffs.push_back(std::string(name) + " " + std::to_string(x) + " vs " + std::to_string(y));
  };
  check("image_size", a.image_size, b.image_size);
  check("patch_size", a.patch_size, b.patch_size);
  check("channels", a.channels, b.channels);
  check("num_classes", a.num_classes, b.num_classes);
  check("dim", a.dim, b.dim);
  check("depth", a.depth, b.depth);
  check("heads", a.heads, b.heads);
  check("head_dim", a.head_dim(), b.head_dim());
  check("mlp_dim", a.mlp_dim, b.mlp_dim);
  check("qkv_bias", int(a.qkv_bias), int(b.qkv_bias));
  check("registers", a.registers, b.registers);
  check("class_token", int(a.class_token), int(b.class_token));
  check("distilled", int(a.distilled), int(b.distilled));
  check("no_embed_class", int(a.prefix_unembedded()), int(b.prefix_unembedded()));
  check("pre_norm", int(a.pre_norm), int(b.pre_norm));
  check("fc_norm", int(a.fc_norm), int(b.fc_norm));
  check("layer_scale", int(a.layer_scale()), int(b.layer_scale()));
  check("patch_bias", int(a.patch_bias), int(b.patch_bias));
  const auto check_named = [&](const char* name, const char* x, const char* y) {
    if (std::string(x) != y) diffs.push_back(std::string(name) + " " + x + " vs " + y);
  };
  check_named("pool", enum_name(a.pool), enum_name(b.pool));
  check_named("act_layer", enum_name(a.act_layer), enum_name(b.act_layer));
  return diffs;
}

namespace {

// The keys of the meta record that CheckpointMeta reads itself.
bool is_meta_key(const std::string& key) {
  static const std::set<std::string> keys = {
      "format_version", "config",      "class_names", "epoch",
      "step",           "best_metric", "best_step",   "validations_since_best",
      "finished",       "stop_reason", "elapsed_s"};
  return keys.count(key) > 0;
}

}  // namespace

std::string meta_to_json(const CheckpointMeta& meta) {
  json j{{"format_version", meta.format_version},
         {"config", config_to_json(meta.config)},
         {"class_names", meta.class_names},
         {"epoch", meta.epoch},
         {"step", meta.step},
         {"best_metric", meta.best_metric},
         {"best_step", meta.best_step},
         {"validations_since_best", meta.validations_since_best},
         {"finished", meta.finished},
         {"stop_reason", meta.stop_reason},
         {"elapsed_s", meta.elapsed_s}};
  for (const auto& [key, value] : meta.trainer.items())
    if (!j.contains(key)) j[key] = value;
  return j.dump();
}

CheckpointMeta meta_from_json(const std::string& text, const std::string& source) {
  CheckpointMeta meta;
  try {
    const json j = json::parse(text);
    meta.format_version = j.at("format_version").get<int64_t>();
    if (meta.format_version != kCheckpointFormatVersion)
      throw Error(source + ": checkpoint format version " + std::to_string(meta.format_version) +
                  ", this vit reads version " + std::to_string(kCheckpointFormatVersion));
    meta.config = config_from_json(j.at("config"));
    meta.config.validate();
    meta.class_names = j.at("class_names").get<std::vector<std::string>>();
    meta.epoch = j.at("epoch").get<int64_t>();
    meta.step = j.at("step").get<int64_t>();
    meta.best_metric = j.at("best_metric").get<double>();
    meta.best_step = j.at("best_step").get<int64_t>();
    meta.validations_since_best = j.at("validations_since_best").get<int64_t>();
    meta.finished = j.at("finished").get<bool>();
    meta.stop_reason = j.at("stop_reason").get<std::string>();
    meta.elapsed_s = j.value("elapsed_s", 0.0);
    for (const auto& [key, value] : j.items())
      if (!is_meta_key(key)) meta.trainer[key] = value;
  } catch (const json::exception& e) {
    throw Error(source + ": damaged checkpoint metadata (" + std::string(e.what()) + ")");
  } catch (const Error& e) {
    const std::string what = e.what();
    throw Error(what.rfind(source, 0) == 0 ? what : source + ": " + what);
  }
  if (static_cast<int64_t>(meta.class_names.size()) != meta.config.model.num_classes)
    throw Error(source + ": " + std::to_string(meta.class_names.size()) + " class names for " +
                std::to_string(meta.config.model.num_classes) + " classes");
  return meta;
}

namespace {

// A timm hub folder: the architecture from config.json, which --config, when
// given, must agree with.
LoadedModel load_hub_model(const std::string& folder,
                           const std::optional<std::string>& config_path) {
  const TimmHubFolder hub = read_timm_hub_folder(folder);
  if (config_path) {
    const auto diffs = architecture_differences(load_config(*config_path).model, hub.config.model);
    if (!diffs.empty())
      throw Error(folder + ": architecture differs from " + *config_path + " (" + diffs.front() +
                  ")");
  }
  const SafetensorsContents contents = read_safetensors(hub.weights);
  check_model_fits_file(hub.config.model, hub.weights, /*bytes_per_parameter=*/1);
  LoadedModel loaded{
      VisionTransformer(hub.config.model, WeightInit::kFromFile), hub.config,
      safetensors_class_names(contents.metadata, hub.config.model.num_classes, hub.weights),
      folder};
  load_weights(loaded.model, contents.tensors, hub.weights);
  loaded.model->eval();
  return loaded;
}

}  // namespace

LoadedModel load_model(const std::string& path, const std::optional<std::string>& config_path) {
  if (is_hf_hub_name(path)) {
    LoadedModel loaded = load_hub_model(resolve_hf_hub(path), config_path);
    loaded.path = path;
    return loaded;
  }
  if (!fs::exists(path)) throw Error(path + ": checkpoint not found");
  if (fs::is_directory(path)) return load_hub_model(path, config_path);
  if (fs::path(path).extension() == ".safetensors")
    return load_safetensors_model(path, config_path);
  LoadedModel loaded = load_pt(path, config_path);
  loaded.model->eval();
  return loaded;
}

LoadedModel load_model_average(const std::string& path) {
  if (!fs::exists(path)) throw Error(path + ": checkpoint not found");
  if (!fs::is_regular_file(path) || fs::path(path).extension() != ".pt")
    throw Error(path + ": the weights' average is kept in vit's training checkpoints (.pt)");
  LoadedModel loaded = load_pt(path, std::nullopt, kModelEmaKey);
  loaded.model->eval();
  return loaded;
}

std::string resolve_checkpoint_path(const std::optional<std::string>& given,
                                    const std::string& runs_dir) {
  if (given) return *given;
  const fs::path latest = fs::path(runs_dir) / "latest" / "best.pt";
  if (!fs::exists(latest))
    throw Error(
        "no --checkpoint given and " + latest.string() +
        " does not exist; train a model first (vit train --config FILE) or pass --checkpoint");
  return latest.string();
}

}  // namespace vit
