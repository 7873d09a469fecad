#pragma once
// Configs by name: `--config cifar10` finds a shipped config, installed
// (<bin>/../share/vit/configs) or in the checkout the binary was built in
// (<bin>/../configs), as well as any file path.
#include <filesystem>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace vit::cli {

// The folders searched for shipped configs, in order: installed beside the
// binary, then the checkout's configs/ (when the binary sits in a build folder).
std::vector<std::filesystem::path> config_folders();

struct ShippedConfig {
  std::string name;            // the file's stem: "cifar10"
  std::filesystem::path path;  // the first folder's file of that name
};
// Every shipped config, by name; a name in two folders is listed once, from the first.
std::vector<ShippedConfig> shipped_configs();

// A --config value: an existing file as given; otherwise the shipped config
// of that name (with or without .json). A vit::Error saying neither exists.
std::string config_path(const std::string& given);

// The --config check: replaces a name by its file (CLI11 transform), or
// fails with config_path's message.
CLI::Validator config_file();

}  // namespace vit::cli
