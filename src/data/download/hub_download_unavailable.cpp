// A vit built without libcurl (CMake's VIT_DOWNLOADS is OFF): models come from
// the cache alone, filled by `huggingface-cli download`. This file replaces
// hub_download.cpp in such a build.
#include "vit/data/download/hub_download.hpp"
#include "vit/error.hpp"
#include "vit/hf_cache.hpp"

namespace vit::data {

std::string download_hf_hub(const std::string& spec, const std::vector<std::string>&) {
  try {
    return resolve_hf_hub(spec);
  } catch (const Error& e) {
    throw Error(std::string(e.what()) +
                " (this vit was built without libcurl, so it cannot download it itself)");
  }
}

void fetch_hf_hub_if_named(const std::string& spec) {
  if (is_hf_hub_name(spec)) download_hf_hub(spec);
}

}  // namespace vit::data
