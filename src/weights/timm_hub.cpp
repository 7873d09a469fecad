#include "vit/weights/timm_hub.hpp"

#include <filesystem>
#include <fstream>
#include <set>

#include <nlohmann/json.hpp>

#include "vit/atomic_write.hpp"
#include "vit/edit_distance.hpp"
#include "vit/error.hpp"
#include "vit/weights/safetensors.hpp"
#include "vit/weights/timm_layout.hpp"

namespace vit {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// One row of the table: timm's VisionTransformer arguments as its entry
// point passes them, and the default input size of its pretrained config.
struct TimmArchitecture {
  const char* name;
  int64_t patch_size, embed_dim, depth, num_heads;
  double mlp_ratio;
  int64_t img_size;
  const char* global_pool;
  bool class_token;
  int64_t reg_tokens;
  int no_embed_class;  // -1: timm's default (false)
  bool pre_norm;
  int fc_norm;  // -1: timm's None (on with avg pooling)
  double init_values;
  const char* act_layer;
  double layer_norm_eps;
  bool distilled;
};

constexpr TimmArchitecture kArchitectures[] = {
#include "timm_architectures.inc"
};

const TimmArchitecture* find_architecture(const std::string& name) {
  for (const auto& a : kArchitectures)
    if (name == a.name) return &a;
  return nullptr;
}

// timm's Block and Mlp: hidden = int(dim * mlp_ratio).
int64_t mlp_width(int64_t dim, double mlp_ratio) {
  return static_cast<int64_t>(static_cast<double>(dim) * mlp_ratio);
}

// The values a model_args key may take, read into the ModelConfig as
// timm's VisionTransformer reads its argument.
class ModelArgs {
 public:
  ModelArgs(const json& args, std::string where) : args_(args), where_(std::move(where)) {}

  template <typename T>
  bool read(const char* key, T& out) const {
    const auto it = args_.find(key);
    if (it == args_.end() || it->is_null()) return false;
    try {
      out = it->template get<T>();
    } catch (const json::exception&) {
      throw Error(where_ + ": " + key + " is " + it->dump() + ", expected " + expected<T>());
    }
    return true;
  }

 private:
  template <typename T>
  static const char* expected() {
    if constexpr (std::is_same_v<T, bool>) return "true or false";
    if constexpr (std::is_same_v<T, std::string>) return "a string";
    if constexpr (std::is_same_v<T, std::vector<double>>) return "a list of numbers";
    if constexpr (std::is_same_v<T, std::vector<int64_t>>) return "a list of integers";
    if constexpr (std::is_integral_v<T>) return "an integer";
    return "a number";
  }
  const json& args_;
  std::string where_;
};

// model_args keys vit reads; any other is refused by name. dynamic_img_size
// and dynamic_img_pad change nothing here (vit resizes every input to
// img_size), nor does weight_init for a model whose weights are loaded.
const std::set<std::string> kKnownArgs = {
    "dynamic_img_size", "dynamic_img_pad", "weight_init",    "img_size",    "patch_size",
    "in_chans",         "num_classes",     "global_pool",    "embed_dim",   "depth",
    "num_heads",        "mlp_ratio",       "qkv_bias",       "init_values", "class_token",
    "no_embed_class",   "reg_tokens",      "pre_norm",       "fc_norm",     "drop_rate",
    "pos_drop_rate",    "attn_drop_rate",  "drop_path_rate", "act_layer"};

// img_size: an int or a square [h, w].
int64_t square_size(const json& value, const std::string& where) {
  if (value.is_number_integer()) return value.get<int64_t>();
  if (value.is_array() && value.size() == 2 && value[0].is_number_integer() && value[0] == value[1])
    return value[0].get<int64_t>();
  throw Error(where + " is " + value.dump() + ", expected a square size (vit's images are square)");
}

ModelConfig from_row(const TimmArchitecture& a) {
  ModelConfig m;
  m.image_size = a.img_size;
  m.patch_size = a.patch_size;
  m.channels = 3;
  m.num_classes = 1000;
  m.dim = a.embed_dim;
  m.depth = a.depth;
  m.heads = a.num_heads;
  m.dim_head = 0;
  m.mlp_dim = mlp_width(a.embed_dim, a.mlp_ratio);
  m.pool = enum_named<Pool>(a.global_pool, "global_pool");
  m.layer_norm_eps = a.layer_norm_eps;
  m.class_token = a.class_token;
  m.registers = a.reg_tokens;
  m.no_embed_class = a.no_embed_class == 1 ? AutoSwitch::kOn : AutoSwitch::kOff;
  m.pre_norm = a.pre_norm;
  // timm: fc_norm None means on with avg pooling.
  m.fc_norm = a.fc_norm < 0 ? m.pool == Pool::kMean : a.fc_norm == 1;
  m.init_values = a.init_values;
  m.act_layer = enum_named<Activation>(a.act_layer, "act_layer");
  m.patch_bias = !a.pre_norm;  // timm: bias=not pre_norm
  m.distilled = a.distilled;
  return m;
}

json read_json_file(const fs::path& path) {
  std::ifstream in(path);
  if (!in) throw Error(path.string() + ": cannot be read");
  const json j = json::parse(in, /*cb=*/nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) throw Error(path.string() + ": not valid JSON");
  if (!j.is_object()) throw Error(path.string() + ": expected a JSON object");
  return j;
}

std::string unknown_architecture(const std::string& name, const std::string& where) {
  const auto near = closest_names(name, timm_architecture_names(), 3);
  std::string list;
  for (const auto& n : near)
    list += (list.empty() ? "" : ", ") + n;
  return where + ": unknown architecture '" + name + "' (closest known: " + list +
         "; docs/models.md lists the families vit builds)";
}

// The model_args over the architecture's defaults, as timm applies them.
void apply_model_args(const json& args, const TimmArchitecture& row, ModelConfig& m,
                      const std::string& where) {
  if (!args.is_object()) throw Error(where + " is " + args.dump() + ", expected an object");
  for (const auto& [key, value] : args.items())
    if (!kKnownArgs.count(key))
      throw Error(where + ": '" + key + "' is a timm argument vit does not build (it builds: " +
                  "timm's VisionTransformer options in docs/models.md)");
  const ModelArgs a(args, where);
  if (args.contains("img_size") && !args["img_size"].is_null())
    m.image_size = square_size(args["img_size"], where + ".img_size");
  a.read("patch_size", m.patch_size);
  a.read("in_chans", m.channels);
  a.read("num_classes", m.num_classes);
  a.read("embed_dim", m.dim);
  a.read("depth", m.depth);
  a.read("num_heads", m.heads);
  double mlp_ratio = 0;
  if (a.read("mlp_ratio", mlp_ratio)) m.mlp_dim = mlp_width(m.dim, mlp_ratio);
  a.read("qkv_bias", m.qkv_bias);
  if (args.contains("init_values") && args["init_values"].is_null())
    m.init_values = 0;  // timm's None: no LayerScale
  else
    a.read("init_values", m.init_values);
  a.read("class_token", m.class_token);
  bool no_embed = false;
  if (a.read("no_embed_class", no_embed))
    m.no_embed_class = no_embed ? AutoSwitch::kOn : AutoSwitch::kOff;
  a.read("reg_tokens", m.registers);
  if (a.read("pre_norm", m.pre_norm)) m.patch_bias = !m.pre_norm;
  std::string name;
  if (a.read("global_pool", name)) m.pool = enum_named<Pool>(name, where + ".global_pool", "");
  if (a.read("act_layer", name))
    m.act_layer = enum_named<Activation>(name, where + ".act_layer", "");
  bool fc_norm = false;
  if (a.read("fc_norm", fc_norm))
    m.fc_norm = fc_norm;
  else if (row.fc_norm < 0)  // the architecture's None follows the pooling, as in timm
    m.fc_norm = m.pool == Pool::kMean;
  a.read("drop_rate", m.dropout);
  a.read("pos_drop_rate", m.emb_dropout);
  a.read("attn_drop_rate", m.attn_dropout);
  a.read("drop_path_rate", m.drop_path);
}

// A pretrained_cfg name vit takes as it is: the Pillow filters and crop modes it
// does as timm does.
template <typename E>
E timm_choice(const ModelArgs& p, const char* key, E fallback, std::initializer_list<E> accepted,
              const std::string& where) {
  std::string name;
  if (!p.read(key, name)) return fallback;
  for (const E value : accepted)
    if (name == enum_name(value)) return value;
  std::string names;
  for (const E value : accepted)
    names += std::string(names.empty() ? "" : " or ") + enum_name(value);
  throw Error(where + "." + key + " is \"" + name + "\", expected " + names);
}

// pretrained_cfg's preprocessing: mean, std, crop_pct, crop_mode (timm's default
// center), interpolation; its input size where model_args gives none (timm's
// fixed_input_size).
void apply_pretrained_cfg(const json& cfg, const json& args, Config& c, const std::string& where) {
  if (!cfg.is_object()) throw Error(where + " is " + cfg.dump() + ", expected an object");
  const ModelArgs p(cfg, where);
  if (p.read("mean", c.data.mean)) c.data.mean_given = true;
  if (p.read("std", c.data.std)) c.data.std_given = true;
  p.read("crop_pct", c.data.crop_pct);
  c.data.crop_mode =
      timm_choice(p, "crop_mode", CropMode::kCenter, {CropMode::kCenter, CropMode::kSquash}, where);
  c.data.interpolation = timm_choice(p, "interpolation", Interpolation::kBicubic,
                                     {Interpolation::kBilinear, Interpolation::kBicubic}, where);
  std::vector<int64_t> input_size;
  if (p.read("input_size", input_size)) {
    if (input_size.size() != 3)
      throw Error(where + ".input_size is " + cfg["input_size"].dump() + ", expected [C, H, W]");
    if (!args.contains("in_chans")) c.model.channels = input_size[0];
    if (!args.contains("img_size"))
      c.model.image_size = square_size(json{input_size[1], input_size[2]}, where + ".input_size");
  }
}

// The table's row that timm turns into `m` through model_args: its own name
// when it is one, else the first whose fixed choices (LayerNorm's epsilon,
// which model_args cannot give, and the distilled class) match.
const TimmArchitecture& export_architecture(const ModelConfig& m, const std::string& name) {
  const auto fits = [&](const TimmArchitecture& a) {
    return a.layer_norm_eps == m.layer_norm_eps && a.distilled == m.distilled;
  };
  if (const TimmArchitecture* own = find_architecture(name); own && fits(*own)) return *own;
  // Else the row whose options differ from the model's in the fewest ways,
  // so that a plain ViT is written as one.
  const auto differences = [&](const TimmArchitecture& a) {
    const ModelConfig r = from_row(a);
    return int(r.class_token != m.class_token) + int(r.registers != m.registers) +
           int(r.pool != m.pool) + int(r.layer_scale() != m.layer_scale()) +
           int(r.pre_norm != m.pre_norm) + int(r.fc_norm != m.fc_norm) +
           int(r.act_layer != m.act_layer) + int(r.prefix_unembedded() != m.prefix_unembedded()) +
           int(r.dim != m.dim) + int(r.patch_size != m.patch_size);
  };
  const TimmArchitecture* best = nullptr;
  for (const auto& a : kArchitectures)
    if (fits(a) && (!best || differences(a) < differences(*best))) best = &a;
  if (best) return *best;
  throw Error("timm has no ViT with LayerNorm eps " + std::to_string(m.layer_norm_eps) +
              (m.distilled ? " and a distillation token" : "") +
              " (its ViTs use 1e-6, CLIP's 1e-5)");
}

json model_args_of(const ModelConfig& m) {
  if (m.patch_bias == m.pre_norm)
    throw Error(
        std::string("timm's ViT has a patch bias exactly without pre_norm; this model has ") +
        (m.patch_bias ? "both" : "neither"));
  if (m.dim % m.heads != 0 || m.head_dim() != m.dim / m.heads)
    throw Error("timm's ViT has heads dim / heads wide; this model's are " +
                std::to_string(m.head_dim()) + " (model.dim_head)");
  const double mlp_ratio = static_cast<double>(m.mlp_dim) / static_cast<double>(m.dim);
  if (mlp_width(m.dim, mlp_ratio) != m.mlp_dim)
    throw Error("timm's mlp_ratio cannot give an MLP " + std::to_string(m.mlp_dim) + " wide");
  json args = {{"img_size", m.image_size},
               {"patch_size", m.patch_size},
               {"in_chans", m.channels},
               {"num_classes", m.num_classes},
               {"global_pool", m.pool == Pool::kCls    ? "token"
                               : m.pool == Pool::kMean ? "avg"
                                                       : "map"},
               {"embed_dim", m.dim},
               {"depth", m.depth},
               {"num_heads", m.heads},
               {"mlp_ratio", mlp_ratio},
               {"qkv_bias", m.qkv_bias},
               {"class_token", m.class_token},
               {"no_embed_class", m.prefix_unembedded()},
               {"pre_norm", m.pre_norm},
               {"fc_norm", m.fc_norm},
               {"act_layer", enum_name(m.act_layer)}};
  if (m.registers > 0) args["reg_tokens"] = m.registers;
  args["init_values"] = m.layer_scale() ? json(m.init_values) : json(nullptr);
  return args;
}

// area has no Pillow filter of its name; bilinear, which Pillow widens when it
// shrinks, is the nearest.
const char* timm_interpolation(Interpolation interpolation) {
  return interpolation == Interpolation::kBicubic ? "bicubic" : "bilinear";
}

}  // namespace

// The architecture is the config's name when it is one, else the first of the table
// that timm can turn into this model through model_args.
json timm_hub_config(const Config& config) {
  const ModelConfig& m = config.model;
  const EvaluationTransform evaluation = evaluation_transform(config.data);
  const TimmArchitecture& architecture = export_architecture(m, config.name);
  const json model_args = model_args_of(m);
  return {{"architecture", architecture.name},
          {"num_classes", m.num_classes},
          {"num_features", m.dim},
          {"global_pool", model_args["global_pool"]},
          {"model_args", model_args},
          {"pretrained_cfg",
           {{"input_size", {m.channels, m.image_size, m.image_size}},
            {"fixed_input_size", true},
            {"interpolation", timm_interpolation(config.data.interpolation)},
            {"crop_pct", evaluation.crop_pct},
            {"crop_mode", enum_name(evaluation.mode)},
            {"mean", config.data.mean},
            {"std", config.data.std},
            {"num_classes", m.num_classes},
            {"first_conv", "patch_embed.proj"},
            {"classifier", m.distilled ? json{"head", "head_dist"} : json("head")}}}};
}

void write_timm_hub_folder(const std::string& folder, const VisionTransformer& model,
                           const Config& config, const std::vector<std::string>& class_names) {
  const std::string text = timm_hub_config(config).dump(2) + "\n";
  std::error_code error;
  fs::create_directories(folder, error);
  if (error) throw Error(folder + ": cannot create the folder (" + error.message() + ")");
  write_safetensors((fs::path(folder) / "model.safetensors").string(), state_tensors(model),
                    export_metadata(config, class_names));
  write_atomically((fs::path(folder) / "config.json").string(),
                   [&](const std::string& temp) { write_bytes(temp, text.data(), text.size()); });
}

std::string model_family(const ModelConfig& m) {
  const bool plain_block = !m.layer_scale() && !m.pre_norm && !m.fc_norm;
  if (m.distilled) return "DeiT distilled";
  if (m.pool == Pool::kMap && !m.class_token) return "SigLIP";
  if (m.pre_norm && !m.patch_bias) return "CLIP";
  if (!m.class_token && m.registers > 0 && m.pool == Pool::kMean) return "timm register model";
  if (m.layer_scale() && m.class_token && m.registers > 0) return "DINOv2 with registers";
  if (m.layer_scale() && m.class_token && m.prefix_unembedded()) return "DeiT III";
  if (m.layer_scale() && m.class_token) return "DINOv2";
  if (plain_block && m.class_token && m.act_layer == Activation::kGelu) return "ViT";
  return "ViT with options";
}

std::vector<std::string> timm_architecture_names() {
  std::vector<std::string> names;
  for (const auto& a : kArchitectures)
    names.emplace_back(a.name);
  return names;
}

ModelConfig timm_architecture(const std::string& name) {
  const TimmArchitecture* row = find_architecture(name);
  if (!row) throw Error(unknown_architecture(name, "timm architecture"));
  return from_row(*row);
}

TimmHubFolder read_timm_hub_folder(const std::string& folder) {
  const fs::path dir(folder);
  const fs::path config_file = dir / "config.json", weights = dir / "model.safetensors";
  if (!fs::exists(config_file))
    throw Error(folder +
                ": not a timm hub folder: no config.json (expected config.json and "
                "model.safetensors, as huggingface-cli download timm/NAME writes them)");
  if (!fs::exists(weights)) {
    if (fs::exists(dir / "pytorch_model.bin"))
      throw Error(folder +
                  ": pytorch_model.bin is a pickle, which vit does not read; convert it "
                  "to model.safetensors: python3 -c \"import torch, safetensors.torch as "
                  "s; s.save_file(torch.load('" +
                  (dir / "pytorch_model.bin").string() + "', map_location='cpu'), '" +
                  weights.string() + "')\"");
    throw Error(folder + ": no model.safetensors beside config.json");
  }
  const std::string where = config_file.string();
  const json j = read_json_file(config_file);
  const auto arch = j.find("architecture");
  if (arch == j.end() || !arch->is_string())
    throw Error(where + ": no \"architecture\" string (timm's model name)");
  const std::string name = arch->get<std::string>();
  const TimmArchitecture* row = find_architecture(name);
  if (!row) throw Error(unknown_architecture(name, where));

  TimmHubFolder out{name, Config{}, weights.string()};
  Config& c = out.config;
  c.name = name;
  c.model = from_row(*row);
  const json no_args = json::object();
  const json& args = j.contains("model_args") ? j["model_args"] : no_args;
  // The top level's num_classes and global_pool stand where model_args has none.
  json merged = args.is_object() ? args : json::object();
  for (const char* key : {"num_classes", "global_pool"})
    if (!merged.contains(key) && j.contains(key)) merged[key] = j[key];
  apply_model_args(merged, *row, c.model, where + " model_args");
  if (j.contains("pretrained_cfg"))
    apply_pretrained_cfg(j["pretrained_cfg"], merged, c, where + " pretrained_cfg");
  try {
    c.validate();
  } catch (const Error& e) {
    throw Error(where + ": " + e.what());
  }
  return out;
}

}  // namespace vit
