#include "vit/hf_cache.hpp"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <fstream>

#include "vit/error.hpp"

namespace vit {
namespace fs = std::filesystem;

std::string hf_setting(const char* name) {
  const char* value = std::getenv(name);
  return value ? value : "";
}

bool is_hf_hub_name(const std::string& spec) {
  return spec.rfind(kHfHubPrefix, 0) == 0;
}

HfHubName hf_hub_name(const std::string& spec) {
  const std::string rest = spec.substr(std::string(kHfHubPrefix).size());
  const size_t at = rest.find('@');
  HfHubName name{rest.substr(0, at), at == std::string::npos ? "main" : rest.substr(at + 1)};
  const size_t slash = name.repo.find('/');
  if (!is_hf_hub_name(spec) || slash == std::string::npos || slash == 0 ||
      slash + 1 == name.repo.size() || name.repo.find('/', slash + 1) != std::string::npos ||
      name.revision.empty() || name.repo.find("..") != std::string::npos ||
      name.revision.find("..") != std::string::npos)
    throw Error(spec + ": expected hf-hub:ORG/NAME or hf-hub:ORG/NAME@REVISION");
  return name;
}

bool is_commit_hash(const std::string& s) {
  return s.size() == 40 && s.find_first_not_of("0123456789abcdef") == std::string::npos;
}

std::string hf_home() {
  if (std::string home = hf_setting("HF_HOME"); !home.empty()) return home;
  return (fs::path(hf_setting("HOME")) / ".cache" / "huggingface").string();
}

std::string hf_hub_cache() {
  if (std::string cache = hf_setting("HF_HUB_CACHE"); !cache.empty()) return cache;
  return (fs::path(hf_home()) / "hub").string();
}

fs::path hf_hub_repo_folder(const HfHubName& name) {
  std::string folder = "models--" + name.repo;
  folder.replace(folder.find('/'), 1, "--");
  return fs::path(hf_hub_cache()) / folder;
}

bool hf_hub_offline() {
  std::string value = hf_setting("HF_HUB_OFFLINE");
  std::transform(value.begin(), value.end(), value.begin(),
                 [](unsigned char c) { return char(std::toupper(c)); });
  return value == "1" || value == "ON" || value == "YES" || value == "TRUE";
}

std::string cached_hf_hub(const HfHubName& name) {
  const fs::path repo = hf_hub_repo_folder(name);
  std::string commit = name.revision;
  if (!is_commit_hash(commit)) {
    std::ifstream ref(repo / "refs" / name.revision);
    std::getline(ref, commit);
  }
  const fs::path snapshot = repo / "snapshots" / commit;
  std::error_code ec;
  if (!is_commit_hash(commit) || !fs::is_directory(snapshot, ec)) return "";
  return snapshot.string();
}

std::string resolve_hf_hub(const std::string& spec) {
  const HfHubName name = hf_hub_name(spec);
  if (std::string snapshot = cached_hf_hub(name); !snapshot.empty()) return snapshot;
  throw Error(spec + ": not in the Hugging Face cache (" + hf_hub_repo_folder(name).string() +
              ", revision " + name.revision + "); fetch it with: huggingface-cli download " +
              name.repo + (name.revision == "main" ? "" : " --revision " + name.revision) +
              (hf_hub_offline() ? " (HF_HUB_OFFLINE is set, so vit does not download it)" : ""));
}

}  // namespace vit
