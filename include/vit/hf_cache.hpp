#pragma once
// `hf-hub:ORG/NAME[@REVISION]`: a model in the Hugging Face cache, laid out
// as huggingface_hub writes it (huggingface-cli download ORG/NAME):
//   CACHE/models--ORG--NAME/refs/REVISION      the commit it points at
//   CACHE/models--ORG--NAME/snapshots/COMMIT/  the files (links into blobs/)
//   CACHE/models--ORG--NAME/blobs/ETAG         the files' bytes, named by the server's ETag
// CACHE is $HF_HUB_CACHE, else $HF_HOME/hub, else ~/.cache/huggingface/hub.
#include <filesystem>
#include <string>

namespace vit {

constexpr const char* kHfHubPrefix = "hf-hub:";

bool is_hf_hub_name(const std::string& spec);

struct HfHubName {
  std::string repo;      // ORG/NAME
  std::string revision;  // a branch, a tag or a commit; "main" when not given
};

// The parts of `spec`; a vit::Error when it is not hf-hub:ORG/NAME[@REVISION].
HfHubName hf_hub_name(const std::string& spec);

bool is_commit_hash(const std::string& s);

// An environment variable huggingface_hub reads (HF_ENDPOINT, HF_TOKEN, ...); "" unset.
std::string hf_setting(const char* name);

// $HF_HOME, else ~/.cache/huggingface: the cache's parent, and the token's folder.
std::string hf_home();
std::string hf_hub_cache();

// CACHE/models--ORG--NAME.
std::filesystem::path hf_hub_repo_folder(const HfHubName& name);

// Whether HF_HUB_OFFLINE asks for no network (1, ON, YES or TRUE, in any case).
bool hf_hub_offline();

// The snapshot folder of `name` in the cache, or "" when it is not there.
std::string cached_hf_hub(const HfHubName& name);

// The snapshot folder of `spec` in the cache; a vit::Error naming the folder
// it looked in and the command that fills it when the model is not there.
std::string resolve_hf_hub(const std::string& spec);

}  // namespace vit
