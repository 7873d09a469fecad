#pragma once
// A timm model from the Hugging Face hub into the cache that huggingface_hub
// reads and writes (vit/hf_cache.hpp), as `huggingface-cli download` fills it,
// from $HF_ENDPOINT with $HF_TOKEN, never under $HF_HUB_OFFLINE; each file
// checked against its ETag. The protocol and the cache's files: hub_download.cpp.
#include <string>
#include <vector>

namespace vit::data {

// The files a timm model needs.
inline std::vector<std::string> hub_model_files() {
  return {"config.json", "model.safetensors"};
}

// Downloads `files` of `spec` (hf-hub:ORG/NAME[@REVISION]) into the cache, but
// those it holds, and returns the snapshot folder. Every failure is a one-line
// vit::Error; a broken transfer is kept, to be resumed.
std::string download_hf_hub(const std::string& spec,
                            const std::vector<std::string>& files = hub_model_files());

// Before vit opens `spec`: an hf-hub name the cache lacks is downloaded,
// unless HF_HUB_OFFLINE; a path is left alone.
void fetch_hf_hub_if_named(const std::string& spec);

}  // namespace vit::data
