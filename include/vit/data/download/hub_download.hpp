#pragma once
// A timm model from the Hugging Face hub into the cache that huggingface_hub
// reads and writes (vit/hf_cache.hpp), the way `huggingface-cli download`
// fills it, so either tool finds what the other fetched.
//   server:  $HF_ENDPOINT (default https://huggingface.co), the file at
//            ENDPOINT/ORG/NAME/resolve/REVISION/FILE
//   token:   $HF_TOKEN, else the file $HF_HOME/token, sent as a bearer token
//            (gated and private models)
//   offline: $HF_HUB_OFFLINE=1 reads the cache and never asks the server
// Each file goes to blobs/ETAG.incomplete, resumes there after a broken
// transfer, and becomes blobs/ETAG only when its hash is the server's ETag
// (SHA-256 for large files, git's SHA-1 for small ones); then
// snapshots/COMMIT/FILE links to it and refs/REVISION names the commit.
// Nothing is written outside the model's folder in the cache and the
// cache's .locks/, where a lock per file keeps two processes (torchrun's
// ranks) from writing it at once.
#include <string>
#include <vector>

namespace vit::data {

// The files a timm model needs: its config.json and model.safetensors.
std::vector<std::string> hub_model_files();

// Downloads `files` of `spec` (hf-hub:ORG/NAME[@REVISION]) into the cache and
// returns the snapshot folder. A file already in blobs/ is not fetched again.
// One-line vit::Errors: a server that cannot be reached, HTTP 401/403 (gated:
// set HF_TOKEN), 404 (naming the file and the revision), a hash that is not
// the ETag (the file is deleted), a broken transfer (kept, to be resumed).
std::string download_hf_hub(const std::string& spec,
                            const std::vector<std::string>& files = hub_model_files());

// What vit calls before it opens `spec`: nothing for a path; for an hf-hub
// name, its snapshot when the cache holds it, else the download (or, under
// HF_HUB_OFFLINE, the cache's one-line error).
void fetch_hf_hub_if_named(const std::string& spec);

}  // namespace vit::data
