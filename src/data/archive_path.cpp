#include "vit/data/archive_path.hpp"

#include <sstream>

namespace vit::data {

std::vector<std::string> archive_path_parts(const std::string& name) {
  std::vector<std::string> parts;
  std::istringstream in(name);
  for (std::string part; std::getline(in, part, '/');)
    if (!part.empty() && part != ".") parts.push_back(part);
  return parts;
}

std::string path_escape(const std::string& name) {
  if (!name.empty() && name.front() == '/') return "an absolute path";
  for (const auto& part : archive_path_parts(name))
    if (part == "..") return "a path with '..'";
  return "";
}

}  // namespace vit::data
