#pragma once
// `hf-hub:ORG/NAME[@REVISION]`: a model in the Hugging Face cache, laid out
// as huggingface_hub writes it (huggingface-cli download ORG/NAME):
//   CACHE/models--ORG--NAME/refs/REVISION      the commit it points at
//   CACHE/models--ORG--NAME/snapshots/COMMIT/  the files (links into blobs/)
// CACHE is $HF_HUB_CACHE, else $HF_HOME/hub, else ~/.cache/huggingface/hub.
#include <string>

namespace vit {

constexpr const char* kHfHubPrefix = "hf-hub:";

bool is_hf_hub_name(const std::string& spec);

// The cache folder that huggingface_hub uses in this environment.
std::string hf_hub_cache();

// The snapshot folder of `spec` in the cache; a vit::Error naming the folder
// it looked in and the command that fills it when the model is not there.
std::string resolve_hf_hub(const std::string& spec);

}  // namespace vit
