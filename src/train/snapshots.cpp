#include "vit/train/snapshots.hpp"

#include <algorithm>
#include <filesystem>
#include <regex>

#include <fmt/format.h>

namespace vit {

std::optional<std::string> snapshot_due(int64_t step, int64_t steps_per_epoch, int64_t every) {
  if (every <= 0 || steps_per_epoch <= 0 || step <= 0 || step % steps_per_epoch != 0) return {};
  const int64_t epoch = step / steps_per_epoch;
  if (epoch % every != 0) return {};
  return fmt::format("snapshots/epoch-{:03d}.pt", epoch);
}

std::vector<Snapshot> list_snapshots(const std::string& run_dir) {
  namespace fs = std::filesystem;
  std::vector<Snapshot> found;
  const fs::path folder = fs::path(run_dir) / "snapshots";
  std::error_code error;
  if (!fs::is_directory(folder, error)) return found;
  static const std::regex name(R"(epoch-(\d+)\.pt)");
  for (const auto& entry : fs::directory_iterator(folder, error)) {
    std::smatch match;
    const std::string file = entry.path().filename().string();
    if (entry.is_regular_file() && std::regex_match(file, match, name))
      found.push_back({std::stoll(match[1].str()), entry.path().string()});
  }
  std::sort(found.begin(), found.end(),
            [](const Snapshot& a, const Snapshot& b) { return a.epoch < b.epoch; });
  return found;
}

}  // namespace vit
