// hf-hub names downloaded from a loopback server that answers as the Hugging
// Face hub does: HEAD /ORG/NAME/resolve/REVISION/FILE gives X-Repo-Commit and
// the ETag (git's SHA-1 of a small file; a large file's SHA-256 in
// X-Linked-Etag, on a 302 to its storage). The cache it fills is the one
// huggingface_hub lays out; no test reaches the internet.
#include "vit/data/download/hub_download.hpp"

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "error_of.hpp"
#include "loopback_http_server.hpp"
#include "process.hpp"
#include "vit/data/download/checksum.hpp"
#include "vit/hf_cache.hpp"
#include "vit/weights/timm_hub.hpp"
#include "vit_test_paths.hpp"
#include "weights/small_model.hpp"

namespace vit::data {
namespace {

namespace fs = std::filesystem;
using testing::error_of;
using testing::LoopbackHttpServer;
using Bytes = std::vector<uint8_t>;

constexpr const char* kSpec = "hf-hub:timm/vit_small_reg4.test";
constexpr const char* kCommit = "fedcba9876543210fedcba9876543210fedcba98";

Bytes bytes_of(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  return Bytes(std::istreambuf_iterator<char>(in), {});
}

std::string digest_of(const Bytes& bytes, DigestKind kind, const std::string& prefix = "") {
  Digest d(kind);
  d.update(prefix.data(), prefix.size());
  d.update(bytes.data(), bytes.size());
  return d.hex();
}

// Every regular file and link under `root`, relative to it.
std::set<std::string> files_under(const fs::path& root) {
  std::set<std::string> out;
  if (!fs::exists(root)) return out;
  for (const auto& e : fs::recursive_directory_iterator(root))
    if (!e.is_directory() || e.is_symlink()) out.insert(e.path().lexically_relative(root).string());
  return out;
}

class HubDownloadTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("vit_hub_download_test_" +
            std::to_string(std::chrono::steady_clock::now().time_since_epoch().count()));
    fs::create_directories(dir_);
    for (const char* name :
         {"HF_HUB_CACHE", "HF_HOME", "HF_HUB_OFFLINE", "HF_ENDPOINT", "HF_TOKEN"})
      if (const char* value = std::getenv(name)) saved_.emplace_back(name, value);
    for (const char* name : {"HF_HUB_CACHE", "HF_HUB_OFFLINE", "HF_TOKEN"})
      ::unsetenv(name);
    ::setenv("HF_HOME", (dir_ / "hf").c_str(), 1);
    ::setenv("HF_ENDPOINT", server_.url("").c_str(), 1);
    // A model the vit binary can open: the weight tests' small ViT as timm's hub files.
    const Config config = testing::small_config();
    write_timm_hub_folder((dir_ / "source").string(),
                          testing::seeded_model(config.model, /*seed=*/3), config, {});
    config_ = bytes_of(dir_ / "source" / "config.json");
    weights_ = bytes_of(dir_ / "source" / "model.safetensors");
    serve(weights_);
  }
  void TearDown() override {
    for (const char* name : {"HF_HOME", "HF_ENDPOINT", "HF_TOKEN", "HF_HUB_OFFLINE"})
      ::unsetenv(name);
    for (const auto& [name, value] : saved_)
      ::setenv(name.c_str(), value.c_str(), 1);
    fs::remove_all(dir_);
  }

  // The hub's answers; the weights' ETag is `weights_etag`, their SHA-256 unless told.
  void serve(const Bytes& weights_served, std::string weights_etag = "") {
    if (weights_etag.empty()) weights_etag = digest_of(weights_, DigestKind::kSha256);
    config_etag_ = digest_of(config_, DigestKind::kSha1,
                             "blob " + std::to_string(config_.size()) + std::string(1, '\0'));
    weights_etag_ = weights_etag;
    const std::string commit = std::string("X-Repo-Commit: ") + kCommit;
    server_.serve(resolve("main", "config.json"), config_,
                  {commit, "ETag: \"" + config_etag_ + "\""});
    // Storage on "another host": localhost, where the hub is 127.0.0.1.
    std::string storage = server_.url("/storage/weights");
    storage.replace(storage.find("127.0.0.1"), 9, "localhost");
    server_.redirect(resolve("main", "model.safetensors"), storage,
                     {commit, "X-Linked-Etag: \"" + weights_etag + "\"",
                      "X-Linked-Size: " + std::to_string(weights_.size())});
    server_.serve("/storage/weights", weights_served);
  }
  static std::string resolve(const std::string& revision, const std::string& file) {
    return "/timm/vit_small_reg4.test/resolve/" + revision + "/" + file;
  }
  fs::path repo() const { return dir_ / "hf" / "hub" / "models--timm--vit_small_reg4.test"; }
  size_t requests_to(const std::string& path) const {
    size_t n = 0;
    for (const auto& r : server_.requests())
      n += r.path == path;
    return n;
  }

  LoopbackHttpServer server_;
  fs::path dir_;
  Bytes config_, weights_;
  std::string config_etag_, weights_etag_;
  std::vector<std::pair<std::string, std::string>> saved_;
};

TEST_F(HubDownloadTest, FillsTheCacheAsHuggingfaceHubLaysItOut) {
  const std::string snapshot = download_hf_hub(kSpec);
  EXPECT_EQ(snapshot, (repo() / "snapshots" / kCommit).string());
  EXPECT_EQ(resolve_hf_hub(kSpec), snapshot);
  std::ifstream ref(repo() / "refs" / "main");
  std::string commit;
  std::getline(ref, commit);
  EXPECT_EQ(commit, kCommit);
  EXPECT_EQ(fs::read_symlink(fs::path(snapshot) / "config.json").string(),
            "../../blobs/" + config_etag_);
  EXPECT_EQ(fs::read_symlink(fs::path(snapshot) / "model.safetensors").string(),
            "../../blobs/" + weights_etag_);
  EXPECT_EQ(bytes_of(fs::path(snapshot) / "config.json"), config_);
  EXPECT_EQ(bytes_of(fs::path(snapshot) / "model.safetensors"), weights_);
  // Nothing but the model's folder and its locks; no part file left.
  const std::string folder = "hub/models--timm--vit_small_reg4.test/";
  EXPECT_EQ(files_under(dir_ / "hf"),
            (std::set<std::string>{
                folder + "blobs/" + config_etag_, folder + "blobs/" + weights_etag_,
                folder + "refs/main", folder + "snapshots/" + kCommit + "/config.json",
                folder + "snapshots/" + kCommit + "/model.safetensors",
                "hub/.locks/models--timm--vit_small_reg4.test/" + config_etag_ + ".lock",
                "hub/.locks/models--timm--vit_small_reg4.test/" + weights_etag_ + ".lock"}));
}

TEST_F(HubDownloadTest, ACachedModelIsNotAskedForAgainAndOfflineNeverAsks) {
  ::setenv("HF_HUB_OFFLINE", "1", 1);
  fetch_hf_hub_if_named(kSpec);
  EXPECT_TRUE(server_.requests().empty());
  EXPECT_NE(error_of([] { resolve_hf_hub(kSpec); }).find("not in the Hugging Face cache"),
            std::string::npos);
  ::unsetenv("HF_HUB_OFFLINE");
  fetch_hf_hub_if_named(kSpec);
  const size_t asked = server_.requests().size();
  // Two HEADs and two GETs, and the weights' GET again at the storage it is redirected to.
  EXPECT_EQ(asked, 5u);
  fetch_hf_hub_if_named(kSpec);
  fetch_hf_hub_if_named("runs/latest/best.pt");  // a path is no hub name
  EXPECT_EQ(server_.requests().size(), asked);
}

TEST_F(HubDownloadTest, AWrongSha256IsRefusedAndNothingIsKept) {
  Bytes damaged = weights_;
  damaged[damaged.size() / 2] ^= 1;
  serve(damaged);
  const std::string error = error_of([] { download_hf_hub(kSpec); });
  EXPECT_EQ(error, std::string(kSpec) + ": model.safetensors is damaged: its SHA-256 is " +
                       digest_of(damaged, DigestKind::kSha256) + ", the hub's ETag " +
                       weights_etag_ + "; it was deleted, run again to fetch it anew");
  EXPECT_FALSE(fs::exists(repo() / "blobs" / weights_etag_));
  EXPECT_FALSE(fs::exists(repo() / "blobs" / (weights_etag_ + ".incomplete")));
  EXPECT_FALSE(fs::exists(repo() / "snapshots" / kCommit / "model.safetensors"));
  EXPECT_FALSE(fs::exists(repo() / "refs" / "main"));
  EXPECT_EQ(cached_hf_hub(hf_hub_name(kSpec)), "");
}

TEST_F(HubDownloadTest, ASmallFileIsCheckedAgainstGitsSha1) {
  config_.back() ^= 1;  // served, but the ETag is of the file before
  const std::string etag = config_etag_;
  server_.serve(resolve("main", "config.json"), config_,
                {std::string("X-Repo-Commit: ") + kCommit, "ETag: \"" + etag + "\""});
  EXPECT_NE(
      error_of([] { download_hf_hub(kSpec); }).find(": config.json is damaged: its SHA-1 is "),
      std::string::npos);
  EXPECT_FALSE(fs::exists(repo() / "blobs" / etag));
}

TEST_F(HubDownloadTest, ACutTransferIsKeptAndResumedWithARange) {
  const size_t cut = weights_.size() / 3;
  server_.break_off_next("/storage/weights", cut);
  const std::string error = error_of([] { download_hf_hub(kSpec); });
  EXPECT_NE(error.find("broke off after " + std::to_string(cut) + " bytes"), std::string::npos)
      << error;
  const fs::path part = repo() / "blobs" / (weights_etag_ + ".incomplete");
  EXPECT_EQ(fs::file_size(part), cut);
  download_hf_hub(kSpec);
  const auto requests = server_.requests();
  EXPECT_EQ(requests.back().path, "/storage/weights");
  EXPECT_EQ(requests.back().range, "bytes=" + std::to_string(cut) + "-");
  EXPECT_EQ(bytes_of(repo() / "snapshots" / kCommit / "model.safetensors"), weights_);
  EXPECT_FALSE(fs::exists(part));
}

TEST_F(HubDownloadTest, TheTokenGoesToTheHubAndNotToTheStorage) {
  ::setenv("HF_TOKEN", "hf_secret", 1);
  download_hf_hub(kSpec);
  size_t to_hub = 0;
  for (const auto& r : server_.requests()) {
    if (r.path.rfind("/timm/", 0) == 0) {
      EXPECT_EQ(r.authorization, "Bearer hf_secret") << r.method << " " << r.path;
      ++to_hub;
    } else {
      EXPECT_EQ(r.authorization, "") << r.method << " " << r.path;
    }
  }
  EXPECT_EQ(to_hub, 4u);
  EXPECT_EQ(requests_to("/storage/weights"), 1u);
}

TEST_F(HubDownloadTest, ARevisionGetsItsOwnRefAndAMissingFileIsNamed) {
  const std::string commit = std::string("X-Repo-Commit: ") + kCommit;
  server_.serve(resolve("v1.0", "config.json"), config_,
                {commit, "ETag: \"" + config_etag_ + "\""});
  server_.serve(resolve("v1.0", "model.safetensors"), weights_,
                {commit, "ETag: \"" + weights_etag_ + "\""});
  download_hf_hub(std::string(kSpec) + "@v1.0");
  EXPECT_TRUE(fs::exists(repo() / "refs" / "v1.0"));
  EXPECT_FALSE(fs::exists(repo() / "refs" / "main"));
  server_.serve(resolve("v0.9", "config.json"), config_,
                {commit, "ETag: \"" + config_etag_ + "\""});
  EXPECT_NE(error_of([] { download_hf_hub(std::string(kSpec) + "@v0.9"); })
                .find("the hub has no model.safetensors at revision v0.9 (HTTP 404 from " +
                      server_.url(resolve("v0.9", "model.safetensors")) +
                      "); a model with pytorch_model.bin alone: fetch it with huggingface-cli "
                      "download timm/vit_small_reg4.test"),
            std::string::npos);
  EXPECT_FALSE(fs::exists(repo() / "refs" / "v0.9"));
  EXPECT_EQ(error_of([] { download_hf_hub(std::string(kSpec) + "@v2.0"); }),
            std::string(kSpec) +
                "@v2.0: the hub has no config.json at revision v2.0 (HTTP 404 from " +
                server_.url(resolve("v2.0", "config.json")) + ")");
}

TEST_F(HubDownloadTest, AServerThatIsNoHubIsOneLine) {
  server_.serve(resolve("main", "config.json"), config_);  // no commit, no ETag
  EXPECT_EQ(error_of([] { download_hf_hub(kSpec); }),
            std::string(kSpec) + ": " + server_.url("") +
                " is not a Hugging Face hub (no commit or ETag for config.json)");
  ::setenv("HF_ENDPOINT", "http://127.0.0.1:1", 1);
  EXPECT_NE(error_of([] { download_hf_hub(kSpec); }).find("cannot reach http://127.0.0.1:1/timm/"),
            std::string::npos);
  EXPECT_FALSE(fs::exists(repo() / "refs"));
}

// The binary as a user runs it: `vit info` of an hf-hub name fills the cache
// from $HF_ENDPOINT and writes nothing else (HOME and the working folder stay
// empty); then `vit predict` opens it offline.
TEST_F(HubDownloadTest, VitInfoDownloadsIntoTheCacheAloneAndPredictRunsOffline) {
  for (const char* folder : {"home", "work"})
    fs::create_directories(dir_ / folder);
  const std::vector<std::string> env = {"HOME=" + (dir_ / "home").string(),
                                        "HF_HOME=" + (dir_ / "hf").string(),
                                        "HF_ENDPOINT=" + server_.url("")};
  testing::ChildProcess info({VIT_BINARY, "info", "--checkpoint", kSpec, "--json", "-q"}, env,
                             dir_ / "work", dir_ / "info.log");
  ASSERT_EQ(info.wait(std::chrono::seconds(120)), 0) << info.output();
  const auto described = nlohmann::json::parse(info.output());
  EXPECT_EQ(described.at("dim"), 32);
  EXPECT_EQ(described.at("checkpoint"), kSpec);
  EXPECT_TRUE(files_under(dir_ / "home").empty());
  EXPECT_TRUE(files_under(dir_ / "work").empty());
  EXPECT_EQ(requests_to("/storage/weights"), 1u);

  auto offline = env;
  offline.push_back("HF_HUB_OFFLINE=1");
  offline.push_back("HF_ENDPOINT=http://127.0.0.1:1");
  testing::ChildProcess predict({VIT_BINARY, "predict", "--checkpoint", kSpec, "--images",
                                 std::string(VIT_SOURCE_DIR) + "/docs/images/curves.png", "--json",
                                 "-q", "--precision", "fp32"},
                                offline, dir_ / "work", dir_ / "predict.log");
  EXPECT_EQ(predict.wait(std::chrono::seconds(120)), 0) << predict.output();
  EXPECT_EQ(requests_to("/storage/weights"), 1u);
}

}  // namespace
}  // namespace vit::data
