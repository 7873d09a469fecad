#include "vit/weights/hf_cache.hpp"

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "vit/error.hpp"

namespace vit {
namespace {

namespace fs = std::filesystem;

std::string env(const char* name) {
  const char* value = std::getenv(name);
  return value ? value : "";
}

bool is_commit(const std::string& s) {
  return s.size() == 40 && s.find_first_not_of("0123456789abcdef") == std::string::npos;
}

struct HubName {
  std::string repo;      // ORG/NAME
  std::string revision;  // a branch, a tag or a commit; "main" when not given
};

HubName parse(const std::string& spec) {
  const std::string rest = spec.substr(std::string(kHfHubPrefix).size());
  const size_t at = rest.find('@');
  HubName name{rest.substr(0, at), at == std::string::npos ? "main" : rest.substr(at + 1)};
  const size_t slash = name.repo.find('/');
  if (slash == std::string::npos || slash == 0 || slash + 1 == name.repo.size() ||
      name.repo.find('/', slash + 1) != std::string::npos || name.revision.empty() ||
      name.repo.find("..") != std::string::npos)
    throw Error(spec + ": expected hf-hub:ORG/NAME or hf-hub:ORG/NAME@REVISION");
  return name;
}

}  // namespace

bool is_hf_hub_name(const std::string& spec) {
  return spec.rfind(kHfHubPrefix, 0) == 0;
}

std::string hf_hub_cache() {
  if (const std::string cache = env("HF_HUB_CACHE"); !cache.empty()) return cache;
  if (const std::string home = env("HF_HOME"); !home.empty())
    return (fs::path(home) / "hub").string();
  return (fs::path(env("HOME")) / ".cache" / "huggingface" / "hub").string();
}

std::string resolve_hf_hub(const std::string& spec) {
  const HubName name = parse(spec);
  std::string folder_name = "models--" + name.repo;
  folder_name.replace(folder_name.find('/'), 1, "--");
  const fs::path repo = fs::path(hf_hub_cache()) / folder_name;
  std::string commit = name.revision;
  if (!is_commit(commit)) {
    std::ifstream ref(repo / "refs" / name.revision);
    std::getline(ref, commit);
  }
  const fs::path snapshot = repo / "snapshots" / commit;
  if (commit.empty() || !fs::is_directory(snapshot))
    throw Error(spec + ": not in the Hugging Face cache (" + repo.string() + ", revision " +
                name.revision + "); fetch it with: huggingface-cli download " + name.repo +
                (name.revision == "main" ? "" : " --revision " + name.revision));
  return snapshot.string();
}

}  // namespace vit
