// The config as JSON: reading a file (strictly: unknown keys and wrong
// types are errors naming the key), writing it, and --set KEY=VALUE.
#include <algorithm>
#include <fstream>
#include <sstream>
#include <type_traits>

#include "fields.hpp"
#include "vit/config.hpp"
#include "vit/error.hpp"

namespace vit {

using config_detail::json;

namespace {

using config_detail::closest_path;
using config_detail::first_key_of;
using config_detail::for_each_field;
using config_detail::json_of;
using config_detail::known_paths;
using config_detail::section_paths;

// Gives mean, std and hflip the dataset's defaults, except those given explicitly.
void apply_dataset_defaults(DataConfig& d) {
  auto [mean, stdev] = dataset_norm_defaults(d.dataset);
  if (!d.mean_given) d.mean = std::move(mean);
  if (!d.std_given) d.std = std::move(stdev);
  if (!d.hflip_given) d.augment.hflip = dataset_hflip_default(d.dataset);
}

json::json_pointer pointer_of(const std::string& dotted) {
  std::string p = "/" + dotted;
  std::replace(p.begin(), p.end(), '.', '/');
  return json::json_pointer(p);
}

std::string type_name(const json& v) {
  return v.type_name();
}

std::string where_text(const std::string& path, const json& v) {
  return "config key '" + path + "': got " + type_name(v) + " " + v.dump();
}

void read_value(const std::string& path, const json& v, std::string& out) {
  if (!v.is_string()) throw Error(where_text(path, v) + ", expected a string");
  out = v.get<std::string>();
}
template <typename E, typename = std::enable_if_t<std::is_enum_v<E>>>
void read_value(const std::string& path, const json& v, E& out) {
  if (!v.is_string()) throw Error(where_text(path, v) + ", expected a string");
  out = enum_named<E>(v.get<std::string>(), path);
}
void read_value(const std::string& path, const json& v, bool& out) {
  if (!v.is_boolean()) throw Error(where_text(path, v) + ", expected true or false");
  out = v.get<bool>();
}
void read_value(const std::string& path, const json& v, int64_t& out) {
  if (!v.is_number_integer()) throw Error(where_text(path, v) + ", expected an integer");
  if (v.is_number_unsigned() && v.get<uint64_t>() > uint64_t(std::numeric_limits<int64_t>::max()))
    throw Error(where_text(path, v) + ", expected an integer below 2^63");
  out = v.get<int64_t>();
}
void read_value(const std::string& path, const json& v, uint64_t& out) {
  if (!v.is_number_integer() ||
      (v.is_number_integer() && !v.is_number_unsigned() && v.get<int64_t>() < 0))
    throw Error(where_text(path, v) + ", expected a non-negative integer");
  out = v.get<uint64_t>();
}
void read_value(const std::string& path, const json& v, double& out) {
  if (!v.is_number()) throw Error(where_text(path, v) + ", expected a number");
  out = v.get<double>();
}
void read_value(const std::string& path, const json& v, std::vector<double>& out) {
  if (!v.is_array()) throw Error(where_text(path, v) + ", expected a list of numbers");
  std::vector<double> values;
  for (const auto& item : v) {
    if (!item.is_number()) throw Error(where_text(path, v) + ", expected a list of numbers");
    values.push_back(item.get<double>());
  }
  out = std::move(values);
}

void read_value(const std::string& path, const json& v, StreamMode& out) {
  if (v.is_boolean()) {
    out = v.get<bool>() ? StreamMode::kOn : StreamMode::kOff;
  } else if (v.is_string() && v.get<std::string>() == "auto") {
    out = StreamMode::kAuto;
  } else {
    throw Error(where_text(path, v) + ", expected \"auto\", true or false");
  }
}
// null (off), or an object with "scale" and "ratio", each optional.
void read_value(const std::string& path, const json& v, std::optional<RandomResizedCrop>& out) {
  if (v.is_null()) {
    out.reset();
    return;
  }
  if (!v.is_object())
    throw Error(where_text(path, v) +
                ", expected null or an object such as {\"scale\": [0.08, 1.0], \"ratio\": "
                "[0.75, 1.3333]}");
  RandomResizedCrop crop;
  for (const auto& [key, value] : v.items()) {
    if (key == "scale")
      read_value(path + ".scale", value, crop.scale);
    else if (key == "ratio")
      read_value(path + ".ratio", value, crop.ratio);
    else
      throw Error("unknown config key '" + path + "." + key + "'; expected scale or ratio");
  }
  out = crop;
}

// null (off), or an object with "decay", "warmup" and "select_best", each optional.
void read_value(const std::string& path, const json& v, std::optional<ModelEmaConfig>& out) {
  if (v.is_null()) {
    out.reset();
    return;
  }
  if (!v.is_object())
    throw Error(where_text(path, v) +
                ", expected null or an object such as {\"decay\": 0.9998, \"warmup\": true}");
  ModelEmaConfig ema;
  for (const auto& [key, value] : v.items()) {
    if (key == "decay")
      read_value(path + ".decay", value, ema.decay);
    else if (key == "warmup")
      read_value(path + ".warmup", value, ema.warmup);
    else if (key == "select_best")
      read_value(path + ".select_best", value, ema.select_best);
    else
      throw Error("unknown config key '" + path + "." + key +
                  "'; expected decay, warmup or select_best");
  }
  out = ema;
}
// false (off), true (every block) or the interval k.
void read_value(const std::string& path, const json& v, GradCheckpointing& out) {
  if (v.is_boolean()) {
    out.every = v.get<bool>() ? 1 : 0;
    return;
  }
  if (!v.is_number_integer())
    throw Error(where_text(path, v) + ", expected true, false or an interval of blocks");
  read_value(path, v, out.every);
}

// Rejects keys that are not config fields, naming the closest valid one.
void check_known_keys(const json& j, const std::string& prefix, const std::set<std::string>& leaves,
                      const std::set<std::string>& sections) {
  if (!j.is_object()) {
    throw Error("config" + (prefix.empty() ? std::string() : " section '" + prefix + "'") +
                ": got " + type_name(j) + ", expected a JSON object");
  }
  for (const auto& [key, value] : j.items()) {
    const std::string path = prefix.empty() ? key : prefix + "." + key;
    if (sections.count(path)) {
      check_known_keys(value, path, leaves, sections);
    } else if (!leaves.count(path)) {
      throw Error("unknown config key '" + path + "'; did you mean '" + closest_path(path) + "'?");
    }
  }
}

void check_all_keys(const json& j) {
  const auto paths = known_paths();
  check_known_keys(j, "", std::set<std::string>(paths.begin(), paths.end()), section_paths());
}

}  // namespace

json config_to_json(const Config& c) {
  json j = json::object();
  for_each_field(c, [&](const char* path, const auto& value, const char*, const auto&) {
    j[pointer_of(path)] = json_of(value);
  });
  return j;
}

std::string config_to_json_string(const Config& c) {
  return config_to_json(c).dump(2) + "\n";
}

Config config_from_json(const json& j) {
  check_all_keys(j);
  Config c;
  for_each_field(c, [&](const char* path, auto& value, const char*, const auto&) {
    const auto pointer = pointer_of(path);
    if (j.contains(pointer)) read_value(path, j.at(pointer), value);
  });
  // A config that changes the dataset but not the normalisation (or flip)
  // gets that dataset's defaults instead of CIFAR-10's.
  c.data.mean_given = j.contains(pointer_of("data.mean"));
  c.data.std_given = j.contains(pointer_of("data.std"));
  c.data.hflip_given = j.contains(pointer_of("data.augment.hflip"));
  apply_dataset_defaults(c.data);
  return c;
}

void apply_override(Config& c, const std::string& assignment) {
  const auto eq = assignment.find('=');
  if (eq == std::string::npos || eq == 0)
    throw Error("--set '" + assignment + "': expected KEY=VALUE, e.g. --set model.depth=8");
  const std::string key = assignment.substr(0, eq);
  const std::string text = assignment.substr(eq + 1);
  bool found = false;
  for_each_field(c, [&](const char* path, auto& value, const char*, const auto&) {
    if (key != path) return;
    found = true;
    using T = std::decay_t<decltype(value)>;
    if constexpr (std::is_same_v<T, std::string>) {
      value = text;
    } else if constexpr (std::is_enum_v<T>) {
      value = enum_named<T>(text, key);
    } else {
      const json parsed = json::parse(text, nullptr, /*allow_exceptions=*/false);
      if (parsed.is_discarded())
        throw Error("--set " + key + ": '" + text +
                    "' is not a valid value (use JSON: 8, 0.5, true, [0.5, 0.5])");
      read_value(key, parsed, value);
    }
  });
  if (!found) {
    // "model" is the closest path to itself, so a section gets its own hint.
    if (section_paths().count(key))
      throw Error("--set: '" + key + "' is a section; set one of its keys, e.g. " +
                  first_key_of(key));
    throw Error("--set: unknown config key '" + key + "'; did you mean '" + closest_path(key) +
                "'?");
  }
  // Explicit values stay; the rest follow the dataset, whichever --set comes first.
  if (key == "data.mean") c.data.mean_given = true;
  if (key == "data.std") c.data.std_given = true;
  if (key == "data.augment.hflip") c.data.hflip_given = true;
  if (key == "data.dataset") apply_dataset_defaults(c.data);
}

Config parse_config_string(const std::string& text, const std::string& source_name) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception& e) {  // parse_error, or out_of_range for a number like 1e908
    throw Error(source_name + ": not valid JSON (" + std::string(e.what()) + ")");
  }
  try {
    return config_from_json(j);
  } catch (const Error& e) {
    throw Error(source_name + ": " + e.what());
  }
}

Config load_config(const std::string& path, const std::vector<std::string>& overrides) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(path + ": cannot open config file");
  std::stringstream buffer;
  buffer << in.rdbuf();
  Config c = parse_config_string(buffer.str(), path);
  for (const auto& assignment : overrides)
    apply_override(c, assignment);
  try {
    c.validate();
  } catch (const Error& e) {
    throw Error(path + ": " + e.what());
  }
  return c;
}

}  // namespace vit
