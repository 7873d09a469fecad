// The config's keys, and the "did you mean" of a mistyped one.
#include <algorithm>
#include <limits>

#include "fields.hpp"
#include "vit/edit_distance.hpp"

namespace vit::config_detail {

std::vector<std::string> known_paths() {
  std::vector<std::string> paths;
  Config c;
  for_each_field(
      c, [&](const char* path, auto&, const char*, const auto&) { paths.emplace_back(path); });
  return paths;
}

std::set<std::string> section_paths() {
  std::set<std::string> sections;
  for (const auto& path : known_paths()) {
    for (size_t dot = path.find('.'); dot != std::string::npos; dot = path.find('.', dot + 1))
      sections.insert(path.substr(0, dot));
  }
  return sections;
}

std::string first_key_of(const std::string& section) {
  for (const auto& path : known_paths()) {
    if (path.compare(0, section.size() + 1, section + ".") == 0) return path;
  }
  return section;
}

std::string closest_path(const std::string& path) {
  const auto dot = path.rfind('.');
  const std::string parent = dot == std::string::npos ? "" : path.substr(0, dot + 1);
  const std::string leaf = path.substr(parent.size());
  std::set<std::string> siblings;
  for (const auto& known : known_paths()) {
    if (known.compare(0, parent.size(), parent) != 0) continue;
    const std::string rest = known.substr(parent.size());
    siblings.insert(rest.substr(0, rest.find('.')));
  }
  if (siblings.empty()) return closest_path(parent.substr(0, parent.size() - 1));
  std::string best;
  size_t best_score = std::numeric_limits<size_t>::max();
  for (const auto& sibling : siblings) {
    const size_t score = edit_distance(leaf, sibling);
    if (score < best_score) best_score = score, best = sibling;
  }
  return parent + best;
}

}  // namespace vit::config_detail
