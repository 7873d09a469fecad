#include "vit/train/run_dir.hpp"

#include <unistd.h>

#include <ctime>
#include <filesystem>
#include <system_error>

#include "vit/atomic_write.hpp"
#include "vit/error.hpp"

namespace vit {
namespace fs = std::filesystem;

std::string new_run_dir(const std::string& name, const std::string& out,
                        const std::string& runs_root) {
  if (!out.empty()) return out;
  const std::time_t now = std::time(nullptr);
  std::tm local{};
  localtime_r(&now, &local);
  char stamp[32];
  std::strftime(stamp, sizeof(stamp), "%Y%m%d-%H%M%S", &local);
  const std::string base = (fs::path(runs_root) / (name + "-" + stamp)).string();
  std::string dir = base;
  for (int i = 2; fs::exists(dir); ++i)
    dir = base + "-" + std::to_string(i);
  return dir;
}

void point_latest_at(const std::string& run_dir, const std::string& runs_root) {
  std::error_code ec;
  fs::create_directories(runs_root, ec);
  if (ec) throw Error(runs_root + ": cannot create folder (" + ec.message() + ")");
  const fs::path root = fs::absolute(runs_root).lexically_normal();
  const fs::path target = fs::absolute(run_dir).lexically_normal();
  const fs::path relative = target.lexically_relative(root);
  const bool inside = !relative.empty() && *relative.begin() != "..";
  link_atomically((root / "latest").string(), (inside ? relative : target).string());
}

}  // namespace vit
