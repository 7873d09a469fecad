#include "cli/config_files.hpp"

#include <map>
#include <system_error>

#include "vit/error.hpp"

namespace vit::cli {
namespace {

namespace fs = std::filesystem;

fs::path binary_folder() {
  std::error_code error;
  const fs::path self = fs::read_symlink("/proc/self/exe", error);
  return error ? fs::path() : self.parent_path();
}

}  // namespace

std::vector<fs::path> config_folders() {
  const fs::path bin = binary_folder();
  if (bin.empty()) return {};
  return {bin.parent_path() / "share" / "vit" / "configs", bin.parent_path() / "configs"};
}

std::vector<ShippedConfig> shipped_configs() {
  std::map<std::string, fs::path> found;
  for (const fs::path& folder : config_folders()) {
    std::error_code error;
    for (fs::directory_iterator it(folder, error), end; !error && it != end; it.increment(error))
      if (it->path().extension() == ".json")
        found.emplace(it->path().stem().string(), it->path());  // keeps the first folder's
  }
  std::vector<ShippedConfig> configs;
  for (const auto& [name, path] : found)
    configs.push_back({name, path});
  return configs;
}

std::string config_path(const std::string& given) {
  std::error_code error;
  if (fs::is_regular_file(given, error)) return given;
  const bool a_name = !given.empty() && given.find('/') == std::string::npos;
  if (a_name) {
    const std::string name =
        fs::path(given).extension() == ".json" ? fs::path(given).stem().string() : given;
    for (const ShippedConfig& config : shipped_configs())
      if (config.name == name) return config.path.string();
  }
  throw Error(given + ": no such config file" +
              (a_name ? ", nor a shipped config of that name (vit config --list names them)" : ""));
}

CLI::Validator config_file() {
  return CLI::Validator(
      [](std::string& value) -> std::string {
        try {
          value = config_path(value);
          return "";
        } catch (const Error& e) {
          return e.what();
        }
      },
      "FILE or NAME");
}

}  // namespace vit::cli
