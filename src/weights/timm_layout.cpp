#include "vit/weights/timm_layout.hpp"

#include <algorithm>
#include <cctype>
#include <map>
#include <set>
#include <sstream>

#include <torch/torch.h>
#include <nlohmann/json.hpp>

#include "vit/error.hpp"
#include "vit/weights/mapped_file.hpp"

namespace vit {
namespace {

// A timm layer that the model, as configured, lacks. `layer` is its name
// with the block index written as '*'; `setting` is the config key that adds
// it, or nullptr where vit's architecture has no such layer.
struct TimmExtra {
  const char* layer;
  const char* what;
  const char* setting;
};
constexpr TimmExtra kTimmExtras[] = {
    {"norm_pre", "a LayerNorm before the blocks, as in CLIP", "model.pre_norm=true"},
    {"fc_norm", "a LayerNorm after pooling in place of 'norm'", "model.fc_norm=true"},
    {"dist_token", "DeiT's distillation token", "model.distilled=true"},
    {"head_dist", "DeiT's distillation head", "model.distilled=true"},
    {"attn_pool", "an attention-pooling head, as in SigLIP", "model.pool=map"},
    {"blocks.*.ls1", "LayerScale on the attention branch with gamma other than 1",
     "model.init_values > 0"},
    {"blocks.*.ls2", "LayerScale on the MLP branch with gamma other than 1",
     "model.init_values > 0"},
    {"patch_embed.norm", "a LayerNorm after the patch embedding", nullptr},
    {"blocks.*.attn.q_norm", "a LayerNorm on the queries (timm qk_norm=True)", nullptr},
    {"blocks.*.attn.k_norm", "a LayerNorm on the keys (timm qk_norm=True)", nullptr},
    {"blocks.*.attn.norm", "a LayerNorm inside attention (timm scale_attn_norm=True)", nullptr},
    {"blocks.*.mlp.norm", "a LayerNorm inside the MLP (timm scale_mlp_norm=True)", nullptr},
};

std::string shape_str(at::IntArrayRef sizes) {
  std::ostringstream out;
  out << sizes;  // "[768, 256]"
  return out.str();
}

// "blocks.11.attn.q_norm.weight" -> "blocks.*.attn.q_norm.weight"
std::string with_block_wildcard(const std::string& key) {
  const std::string prefix = "blocks.";
  if (key.rfind(prefix, 0) != 0) return key;
  size_t end = prefix.size();
  while (end < key.size() && std::isdigit(static_cast<unsigned char>(key[end])))
    ++end;
  if (end == prefix.size()) return key;
  return prefix + "*" + key.substr(end);
}

bool has_prefix_layer(const std::string& key, const std::string& layer) {
  return key == layer || key.rfind(layer + ".", 0) == 0;
}

const TimmExtra* find_timm_extra(const std::string& key) {
  const std::string pattern = with_block_wildcard(key);
  for (const auto& extra : kTimmExtras) {
    if (has_prefix_layer(pattern, extra.layer)) return &extra;
  }
  return nullptr;
}

// The layer's own name within `key`: as many dot-separated parts as `layer` has.
std::string layer_instance(const std::string& key, const std::string& layer) {
  auto parts = std::count(layer.begin(), layer.end(), '.') + 1;
  size_t next = 0;
  while (parts-- > 0) {
    const size_t dot = key.find('.', next);
    if (dot == std::string::npos) return key;
    next = dot + 1;
  }
  return key.substr(0, next - 1);
}

// "I64" for what a safetensors file can hold, LibTorch's name otherwise.
std::string dtype_label(at::ScalarType dtype) {
  try {
    return safetensors_dtype_name(dtype);
  } catch (const Error&) {
    return c10::toString(dtype);
  }
}

bool is_layer_scale_gamma(const std::string& key) {
  const std::string pattern = with_block_wildcard(key);
  return pattern == "blocks.*.ls1.gamma" || pattern == "blocks.*.ls2.gamma";
}

// A gamma that is not [dim] cannot scale this model's width at all: that is a
// file or config mismatch, not a LayerScale the architecture lacks.
bool is_misshapen_layer_scale(const std::string& key, const at::Tensor& t, int64_t dim) {
  return is_layer_scale_gamma(key) && t.defined() && !(t.dim() == 1 && t.size(0) == dim);
}

// x + gamma * f(x) with every gamma exactly 1 is x + f(x): our block.
bool is_identity_layer_scale(const std::string& key, const at::Tensor& t, int64_t dim) {
  return is_layer_scale_gamma(key) && t.defined() && at::isFloatingType(t.scalar_type()) &&
         t.dim() == 1 && t.size(0) == dim && t.eq(1).all().item<bool>();
}

// Problems with the tensors the model expects, in the model's order.
void check_expected(const torch::OrderedDict<std::string, at::Tensor>& params,
                    const TensorMap& state, std::vector<std::string>& problems) {
  for (const auto& p : params) {
    const auto it = state.find(p.key());
    const std::string expected = shape_str(p.value().sizes());
    if (it == state.end() || !it->second.defined()) {
      problems.push_back("missing key '" + p.key() + "' (expected " + expected + ")");
    } else if (!at::isFloatingType(it->second.scalar_type())) {
      problems.push_back(p.key() + ": file has dtype " + dtype_label(it->second.scalar_type()) +
                         ", expected a floating-point dtype");
    } else if (it->second.sizes() != p.value().sizes()) {
      problems.push_back(p.key() + ": expected " + expected + ", file has " +
                         shape_str(it->second.sizes()));
    }
  }
}

// Problems with the tensors the file has beyond the model: LayerScale gammas
// of the wrong shape, timm layers we lack, grouped per layer, then other
// unexpected keys. Identity layers go to `report` instead.
void check_extra(const torch::OrderedDict<std::string, at::Tensor>& params, const TensorMap& state,
                 int64_t dim, LoadReport& report, std::vector<std::string>& problems) {
  std::map<const TimmExtra*, std::set<std::string>> timm_layers;
  std::vector<std::string> unexpected;
  for (const auto& [key, t] : state) {
    if (params.contains(key)) continue;
    if (is_identity_layer_scale(key, t, dim)) {
      report.ignored_identity.push_back(key);
    } else if (is_misshapen_layer_scale(key, t, dim)) {
      problems.push_back(key + ": expected " + shape_str(std::vector<int64_t>{dim}) +
                         ", file has " + shape_str(t.sizes()));
    } else if (const TimmExtra* extra = find_timm_extra(key)) {
      timm_layers[extra].insert(layer_instance(key, extra->layer));
    } else {
      unexpected.push_back("unexpected key '" + key + "'" +
                           (t.defined() ? " (shape " + shape_str(t.sizes()) + ")" : ""));
    }
  }
  for (const auto& extra : kTimmExtras) {  // the table's order, not pointer order
    const auto it = timm_layers.find(&extra);
    if (it == timm_layers.end()) continue;
    const std::string layer = extra.layer;
    const std::string where = layer.find('*') == std::string::npos
                                  ? "timm layer '" + layer + "'"
                                  : "timm layer '" + layer + "' (in " +
                                        std::to_string(it->second.size()) +
                                        (it->second.size() == 1 ? " block)" : " blocks)");
    problems.push_back(extra.setting ? where + " needs " + extra.setting + ": " + extra.what
                                     : where + " is not part of vit's architecture: " + extra.what);
  }
  problems.insert(problems.end(), unexpected.begin(), unexpected.end());
}

// One hint for the commonest config mistake: qkv biases present or absent.
std::string qkv_bias_hint(const ModelConfig& cfg, const TensorMap& state) {
  const bool file_has_bias = state.count("blocks.0.attn.qkv.bias") > 0;
  if (cfg.depth == 0 || file_has_bias == cfg.qkv_bias) return "";
  return file_has_bias ? " (the file has qkv biases: the config needs model.qkv_bias=true)"
                       : " (the file has no qkv biases: the config needs model.qkv_bias=false)";
}

// And for the register count: the file's reg_token (1, R, D) against
// model.registers.
std::string registers_hint(const ModelConfig& cfg, const TensorMap& state) {
  const auto it = state.find("reg_token");
  const int64_t file_registers =
      it == state.end() || it->second.dim() != 3 ? 0 : it->second.size(1);
  if (file_registers == cfg.registers) return "";
  return " (the file has " + std::to_string(file_registers) +
         " register tokens: the config needs model.registers=" + std::to_string(file_registers) +
         ")";
}

std::string join(const std::vector<std::string>& items, const std::string& separator) {
  std::string out;
  for (const auto& item : items)
    out += (out.empty() ? "" : separator) + item;
  return out;
}

}  // namespace

// Under NoGradGuard. A shape mismatch reads `blocks.3.attn.qkv.weight: expected
// [768, 256], file has [384, 128]`; the timm layers our architecture may lack include
// norm_pre, fc_norm, dist_token, attn_pool, q_norm/k_norm and LayerScale with gamma
// != 1. Parameter-free timm layers such as head_drop never appear in a state dict.
LoadReport load_weights(VisionTransformer& model, const TensorMap& state,
                        const std::string& source_name) {
  const auto params = model->named_parameters();
  LoadReport report;
  std::vector<std::string> problems;
  check_expected(params, state, problems);
  check_extra(params, state, model->config().dim, report, problems);
  if (!problems.empty()) {
    throw Error(source_name + ": " + std::to_string(problems.size()) + " problem" +
                (problems.size() == 1 ? "" : "s") +
                " loading the weights into vit's model: " + join(problems, "; ") +
                qkv_bias_hint(model->config(), state) + registers_hint(model->config(), state));
  }
  torch::NoGradGuard no_grad;
  for (const auto& p : params) {
    const at::Tensor& source = state.at(p.key());
    p.value().copy_(source);
    release_mapped_pages(source);  // a mapped file's pages, once copied
  }
  return report;
}

TensorMap state_tensors(const VisionTransformer& model) {
  TensorMap out;
  const auto options = at::TensorOptions().device(at::kCPU).dtype(at::kFloat);
  for (const auto& p : model->named_parameters()) {
    out.emplace(p.key(),
                p.value().detach().to(options, /*non_blocking=*/false, /*copy=*/true).contiguous());
  }
  return out;
}

StringMap export_metadata(const Config& config, const std::vector<std::string>& class_names) {
  StringMap metadata{{"format", "pt"}, {"vit_config", config_to_json_string(config)}};
  if (!class_names.empty()) metadata.emplace("class_names", nlohmann::json(class_names).dump());
  return metadata;
}

std::optional<Config> config_from_metadata(const StringMap& metadata,
                                           const std::string& source_name) {
  const auto it = metadata.find("vit_config");
  if (it == metadata.end()) return std::nullopt;
  const std::string where = source_name + " __metadata__[\"vit_config\"]";
  Config config = parse_config_string(it->second, where);
  try {
    config.validate();
  } catch (const Error& e) {
    throw Error(where + ": " + e.what());
  }
  return config;
}

std::optional<std::vector<std::string>> class_names_from_metadata(const StringMap& metadata,
                                                                  int64_t num_classes,
                                                                  const std::string& source_name) {
  const auto it = metadata.find("class_names");
  if (it == metadata.end()) return std::nullopt;
  const std::string where = source_name + " __metadata__[\"class_names\"]";
  const auto names = nlohmann::json::parse(it->second, /*cb=*/nullptr, /*allow_exceptions=*/false);
  const bool all_strings =
      names.is_array() &&
      std::all_of(names.begin(), names.end(), [](const auto& n) { return n.is_string(); });
  if (!all_strings) throw Error(where + ": expected a JSON array of strings");
  if (static_cast<int64_t>(names.size()) != num_classes) {
    throw Error(where + ": " + std::to_string(names.size()) + " names for " +
                std::to_string(num_classes) + " classes");
  }
  return names.get<std::vector<std::string>>();
}

void save_safetensors_weights(const std::string& path, const VisionTransformer& model,
                              const Config& config, const std::vector<std::string>& class_names) {
  write_safetensors(path, state_tensors(model), export_metadata(config, class_names));
}

LoadReport load_safetensors_weights(VisionTransformer& model, const std::string& path) {
  return load_weights(model, read_safetensors(path).tensors, path);
}

}  // namespace vit
