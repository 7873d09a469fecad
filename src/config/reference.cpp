// The reference of every config key (vit config --reference, docs/config.md),
// from the field table.
#include <string>
#include <type_traits>

#include "fields.hpp"
#include "vit/config.hpp"

namespace vit {

using config_detail::for_each_field;
using config_detail::json_of;

namespace {

template <typename T>
std::string type_of_value() {
  if constexpr (std::is_same_v<T, StreamMode>) return "\"auto\" or true/false";
  if constexpr (std::is_same_v<T, std::optional<RandomResizedCrop>>)
    return "null or {scale: [lo, hi], ratio: [lo, hi]}";
  if constexpr (std::is_same_v<T, std::optional<ModelEmaConfig>>)
    return "null or {decay: number, warmup: true/false, select_best: true/false}";
  if constexpr (std::is_same_v<T, GradCheckpointing>) return "true/false or integer";
  if constexpr (std::is_enum_v<T>) return "string: " + enum_choices<T>();
  if constexpr (std::is_same_v<T, std::string>) return "string";
  if constexpr (std::is_same_v<T, bool>) return "true/false";
  if constexpr (std::is_same_v<T, int64_t>) return "integer";
  if constexpr (std::is_same_v<T, uint64_t>) return "integer >= 0";
  if constexpr (std::is_same_v<T, double>) return "number";
  if constexpr (std::is_same_v<T, std::vector<double>>) return "list of numbers";
  return "";
}

// A table cell: Markdown takes a bare '|' as the cell's end.
std::string cell(const std::string& text) {
  std::string out;
  for (const char ch : text) {
    if (ch == '|') out += '\\';
    out += ch;
  }
  return out;
}

std::string section_of(const std::string& path) {
  const auto dot = path.rfind('.');
  return dot == std::string::npos ? "" : path.substr(0, dot);
}

}  // namespace

std::vector<ConfigKey> config_keys() {
  std::vector<ConfigKey> keys;
  const Config defaults;
  for_each_field(defaults, [&](const char* path, const auto& value, const char* meaning,
                               const config_detail::Range& range) {
    using T = std::decay_t<decltype(value)>;
    std::string type = type_of_value<T>();
    if (!range.any())
      type += (std::is_same_v<T, std::vector<double>> ? ", each " : ", ") + range.text();
    const std::string note = range.note;
    keys.push_back(
        {path, type, json_of(value).dump(), note.empty() ? meaning : meaning + ("; " + note)});
  });
  return keys;
}

std::string config_reference_markdown() {
  std::string out =
      "# Config reference\n\n"
      "Every key of a vit config, with its type, default and meaning. All keys are optional;\n"
      "a config file gives the ones it changes, and `--set KEY=VALUE` overrides any of them\n"
      "by its dotted path. Reading is strict: an unknown key, a value of the wrong type or an\n"
      "impossible value is an error that names the key.\n\n"
      "`vit config --defaults` prints the whole default config as JSON. This page is what\n"
      "`vit config --reference` prints, from the field table in `src/config/fields.hpp`; a test "
      "fails\n"
      "when the two disagree. `data.mean`, `data.std` and `data.augment.hflip` default per\n"
      "dataset; the defaults shown are CIFAR-10's.\n";
  std::string section = "-";
  for (const auto& key : config_keys()) {
    const std::string here = section_of(key.path);
    if (here != section) {
      section = here;
      out += "\n## " + (section.empty() ? std::string("top level") : "`" + section + "`") +
             "\n\n| key | type | default | meaning |\n|---|---|---|---|\n";
    }
    out += "| `" + key.path + "` | " + cell(key.type) + " | `" + cell(key.default_json) + "` | " +
           cell(key.meaning) + " |\n";
  }
  return out;
}

}  // namespace vit
