// The hub's protocol, as huggingface_hub speaks it:
//   server:  $HF_ENDPOINT (default https://huggingface.co), the file at
//            ENDPOINT/ORG/NAME/resolve/REVISION/FILE
//   token:   $HF_TOKEN, else the file $HF_HOME/token, sent as a bearer token
//            (gated and private models)
// Each file goes to blobs/ETAG.incomplete, resumes there after a broken
// transfer, and becomes blobs/ETAG only when its hash is the server's ETag
// (SHA-256 for large files, git's SHA-1 for small ones); then
// snapshots/COMMIT/FILE links to it and refs/REVISION names the commit.
// Nothing is written outside the model's folder in the cache and the
// cache's .locks/, where a lock per file keeps two processes (torchrun's
// ranks) from writing it at once.
#include "vit/data/download/hub_download.hpp"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <optional>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "vit/atomic_write.hpp"
#include "vit/data/download/checksum.hpp"
#include "vit/data/download/download.hpp"
#include "vit/data/download/file_lock.hpp"
#include "vit/error.hpp"
#include "vit/hf_cache.hpp"

namespace vit::data {
namespace {

namespace fs = std::filesystem;

constexpr int kMaxRelativeRedirects = 5;

std::string endpoint() {
  std::string url = hf_setting("HF_ENDPOINT");
  if (url.empty()) url = "https://huggingface.co";
  while (!url.empty() && url.back() == '/')
    url.pop_back();
  return url;
}

// $HF_TOKEN, else the token `huggingface-cli login` saved in $HF_HOME/token.
std::string token() {
  if (std::string t = hf_setting("HF_TOKEN"); !t.empty()) return t;
  std::ifstream in(fs::path(hf_home()) / "token");
  std::string t;
  std::getline(in, t);
  return t;
}

std::vector<std::string> request_headers() {
  const std::string t = token();
  if (t.empty()) return {};
  return {"Authorization: Bearer " + t};
}

// A revision in a URL's path: "refs/pr/1" is one segment, refs%2Fpr%2F1.
std::string path_segment(const std::string& text) {
  std::string out;
  for (const unsigned char c : text) {
    if (std::isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~')
      out += char(c);
    else
      out += fmt::format("%{:02X}", c);
  }
  return out;
}

// What the server says of one file before it is fetched.
struct FileAnswer {
  std::string url;     // the file's URL on the server
  std::string commit;  // X-Repo-Commit: the revision's commit
  std::string etag;    // X-Linked-Etag (a large file's SHA-256), else ETag (git's SHA-1)
};

std::string unquoted_etag(std::string etag) {
  if (etag.rfind("W/", 0) == 0) etag = etag.substr(2);
  if (etag.size() >= 2 && etag.front() == '"' && etag.back() == '"')
    etag = etag.substr(1, etag.size() - 2);
  return etag;
}

bool is_hex(const std::string& s, size_t digits) {
  return s.size() == digits && s.find_first_not_of("0123456789abcdef") == std::string::npos;
}

std::string header_or_empty(const HeadAnswer& a, const std::string& name) {
  const auto it = a.headers.find(name);
  return it == a.headers.end() ? "" : it->second;
}

// HEAD without following redirects, as huggingface_hub asks: a large file's
// answer is a redirect to its storage, with the commit and ETag on the
// redirect itself; a redirect within the server (a renamed model) is followed.
FileAnswer ask_about(const std::string& spec, const HfHubName& name, const std::string& file,
                     const std::vector<std::string>& headers) {
  const std::string base = endpoint();
  std::string url =
      fmt::format("{}/{}/resolve/{}/{}", base, name.repo, path_segment(name.revision), file);
  for (int redirects = 0;; ++redirects) {
    const HeadAnswer a = head_url(url, headers);
    if (a.status == 401 || a.status == 403)
      throw Error(
          fmt::format("{}: the hub answered HTTP {} for {}: the model is gated or private; "
                      "accept its terms on the hub and set HF_TOKEN",
                      spec, a.status, file));
    if (a.status == 404)
      throw Error(fmt::format(
          "{}: the hub has no {} at revision {} (HTTP 404 from {}){}", spec, file, name.revision,
          url,
          file == "model.safetensors"
              ? "; a model with pytorch_model.bin alone: fetch it with huggingface-cli download " +
                    name.repo + ", and vit --checkpoint on the snapshot folder names the conversion"
              : ""));
    if (a.status >= 400 || a.status < 200)
      throw Error(fmt::format("{}: the hub answered HTTP {} for {}", spec, a.status, url));
    const std::string commit = header_or_empty(a, "x-repo-commit");
    const std::string location = header_or_empty(a, "location");
    if (commit.empty() && a.status >= 300 && location.rfind('/', 0) == 0 &&
        redirects < kMaxRelativeRedirects) {
      url = base + location;
      continue;
    }
    std::string etag = header_or_empty(a, "x-linked-etag");
    if (etag.empty()) etag = header_or_empty(a, "etag");
    etag = unquoted_etag(etag);
    if (!is_commit_hash(commit) || etag.empty() || etag.find('/') != std::string::npos ||
        etag.find("..") != std::string::npos)
      throw Error(fmt::format("{}: {} is not a Hugging Face hub (no commit or ETag for {})", spec,
                              base, file));
    // The bytes come from this URL, through its redirect: libcurl leaves the
    // token out when that redirect leads to another host (the storage).
    return {url, commit, etag};
  }
}

// The hash the ETag is, or nothing for an ETag that is no hash (then the
// file is kept unchecked, as huggingface_hub keeps it).
struct ExpectedHash {
  DigestKind kind;
  std::string prefix;
};
std::optional<ExpectedHash> hash_of_etag(const std::string& etag, uintmax_t size) {
  if (is_hex(etag, 64)) return ExpectedHash{DigestKind::kSha256, ""};
  if (is_hex(etag, 40)) return ExpectedHash{DigestKind::kSha1, fmt::format("blob {}", size) + '\0'};
  return std::nullopt;
}

// blobs/ETAG, fetched and checked unless it is there already.
void fetch_blob(const std::string& spec, const std::string& file, const FileAnswer& answer,
                const fs::path& repo, const std::vector<std::string>& headers) {
  const fs::path blob = repo / "blobs" / answer.etag;
  // huggingface_hub's own lock file for this blob, so each waits for the other.
  const FileLock lock(fs::path(hf_hub_cache()) / ".locks" / repo.filename() /
                      (answer.etag + ".lock"));
  if (fs::exists(blob)) return;
  fs::create_directories(blob.parent_path());
  const fs::path part = blob.string() + ".incomplete";
  fetch_url(answer.url, part, spec + " " + file, headers);
  if (const auto expected = hash_of_etag(answer.etag, fs::file_size(part))) {
    const std::string got = file_digest(part, expected->kind, expected->prefix);
    if (got != answer.etag) {
      fs::remove(part);
      throw Error(
          fmt::format("{}: {} is damaged: its {} is {}, the hub's ETag {}; it was deleted, "
                      "run again to fetch it anew",
                      spec, file, digest_name(expected->kind), got, answer.etag));
    }
  } else {
    spdlog::warn("{}: {}'s ETag {} is no hash, so the file is kept unchecked", spec, file,
                 answer.etag);
  }
  move_into_place(part.string(), blob.string());
}

// snapshots/COMMIT/FILE -> ../../blobs/ETAG, relative as huggingface_hub links it.
void link_snapshot(const fs::path& repo, const std::string& commit, const std::string& file,
                   const std::string& etag) {
  const fs::path link = repo / "snapshots" / commit / file;
  fs::create_directories(link.parent_path());
  std::string up;
  for (size_t depth = std::count(file.begin(), file.end(), '/'); depth > 0; --depth)
    up += "../";
  link_atomically(link.string(), up + "../../blobs/" + etag);
}

}  // namespace

std::string download_hf_hub(const std::string& spec, const std::vector<std::string>& files) {
  const HfHubName name = hf_hub_name(spec);
  const fs::path repo = hf_hub_repo_folder(name);
  const std::vector<std::string> headers = request_headers();
  std::string commit;
  for (const auto& file : files) {
    const FileAnswer answer = ask_about(spec, name, file, headers);
    if (!commit.empty() && answer.commit != commit)
      throw Error(
          fmt::format("{}: revision {} moved from commit {} to {} during the download; "
                      "run again",
                      spec, name.revision, commit, answer.commit));
    commit = answer.commit;
    fetch_blob(spec, file, answer, repo, headers);
    link_snapshot(repo, commit, file, answer.etag);
  }
  if (name.revision != commit)
    write_text_atomically((repo / "refs" / name.revision).string(), commit);
  spdlog::info("{}: commit {} in {}", spec, commit, repo.string());
  return (repo / "snapshots" / commit).string();
}

void fetch_hf_hub_if_named(const std::string& spec) {
  if (!is_hf_hub_name(spec) || hf_hub_offline()) return;
  const std::string snapshot = cached_hf_hub(hf_hub_name(spec));
  bool complete = !snapshot.empty();
  for (const auto& file : hub_model_files())
    complete = complete && fs::exists(fs::path(snapshot) / file);
  if (!complete) download_hf_hub(spec);
}

}  // namespace vit::data
