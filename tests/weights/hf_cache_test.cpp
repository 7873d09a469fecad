#include "vit/hf_cache.hpp"

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>
#include <torch/torch.h>
#include <nlohmann/json.hpp>

#include "error_of.hpp"
#include "small_model.hpp"
#include "vit/weights/checkpoint.hpp"
#include "vit/weights/safetensors.hpp"
#include "vit/weights/timm_hub.hpp"
#include "vit/weights/timm_layout.hpp"

namespace vit {
namespace {

namespace fs = std::filesystem;
using testing::error_of;

constexpr const char* kCommit = "0123456789abcdef0123456789abcdef01234567";

// A cache laid out as huggingface_hub writes it: refs/main holds the commit,
// snapshots/COMMIT/ links each file into blobs/.
class HfCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    home_ = fs::temp_directory_path() /
            ("vit_hf_cache_test_" +
             std::to_string(std::chrono::steady_clock::now().time_since_epoch().count()));
    for (const char* name : {"HF_HUB_CACHE", "HF_HOME", "HF_HUB_OFFLINE"})
      if (const char* value = std::getenv(name)) saved_.emplace_back(name, value);
    ::unsetenv("HF_HUB_CACHE");
    ::setenv("HF_HOME", home_.c_str(), 1);
  }
  void TearDown() override {
    ::unsetenv("HF_HOME");
    for (const auto& [name, value] : saved_)
      ::setenv(name.c_str(), value.c_str(), 1);
    fs::remove_all(home_);
  }
  fs::path repo() const {
    return home_ / "hub" / "models--timm--vit_small_patch14_reg4_dinov2.lvd142m";
  }

  // config.json and model.safetensors of a depth-2, 28 px DINOv2-reg4 in the cache.
  VisionTransformer fill_cache() const {
    const nlohmann::json config = {
        {"architecture", "vit_small_patch14_reg4_dinov2"},
        {"model_args", {{"img_size", 28}, {"depth", 2}, {"num_classes", 3}}}};
    fs::create_directories(repo() / "blobs");
    fs::create_directories(repo() / "refs");
    fs::create_directories(repo() / "snapshots" / kCommit);
    std::ofstream(repo() / "refs" / "main") << kCommit;
    std::ofstream(repo() / "blobs" / "a1") << config.dump();
    ModelConfig m = timm_architecture("vit_small_patch14_reg4_dinov2");
    m.image_size = 28;
    m.depth = 2;
    m.num_classes = 3;
    VisionTransformer model = testing::seeded_model(m, /*seed=*/5);
    write_safetensors((repo() / "blobs" / "b2").string(), state_tensors(model));
    fs::create_symlink("../../blobs/a1", repo() / "snapshots" / kCommit / "config.json");
    fs::create_symlink("../../blobs/b2", repo() / "snapshots" / kCommit / "model.safetensors");
    return model;
  }

  fs::path home_;
  std::vector<std::pair<std::string, std::string>> saved_;
};

TEST_F(HfCacheTest, TheCacheIsHfHubCacheElseHfHomeElseHome) {
  EXPECT_EQ(hf_hub_cache(), (home_ / "hub").string());
  ::setenv("HF_HUB_CACHE", "/elsewhere/hub", 1);
  EXPECT_EQ(hf_hub_cache(), "/elsewhere/hub");
  ::unsetenv("HF_HUB_CACHE");
  ::unsetenv("HF_HOME");
  EXPECT_EQ(hf_hub_cache(), (fs::path(std::getenv("HOME")) / ".cache/huggingface/hub").string());
  ::setenv("HF_HOME", home_.c_str(), 1);
}

TEST_F(HfCacheTest, ANameOpensItsSnapshotThroughRefsOrByCommit) {
  VisionTransformer written = fill_cache();
  const std::string snapshot = (repo() / "snapshots" / kCommit).string();
  EXPECT_EQ(resolve_hf_hub("hf-hub:timm/vit_small_patch14_reg4_dinov2.lvd142m"), snapshot);
  EXPECT_EQ(
      resolve_hf_hub(std::string("hf-hub:timm/vit_small_patch14_reg4_dinov2.lvd142m@") + kCommit),
      snapshot);
  LoadedModel loaded = load_model("hf-hub:timm/vit_small_patch14_reg4_dinov2.lvd142m");
  EXPECT_EQ(loaded.path, "hf-hub:timm/vit_small_patch14_reg4_dinov2.lvd142m");
  torch::NoGradGuard no_grad;
  const auto images = torch::randn({2, 3, 28, 28});
  EXPECT_TRUE(torch::equal(loaded.model->forward(images), written->forward(images)));
}

TEST_F(HfCacheTest, AMissingModelOrABadNameIsAOneLineError) {
  EXPECT_EQ(error_of([] { resolve_hf_hub("hf-hub:timm/vit_base_patch16_224@v2"); }),
            "hf-hub:timm/vit_base_patch16_224@v2: not in the Hugging Face cache (" +
                (home_ / "hub" / "models--timm--vit_base_patch16_224").string() +
                ", revision v2); fetch it with: huggingface-cli download timm/vit_base_patch16_224 "
                "--revision v2");
  ::setenv("HF_HUB_OFFLINE", "1", 1);
  EXPECT_EQ(error_of([] { resolve_hf_hub("hf-hub:timm/vit_base_patch16_224"); }),
            "hf-hub:timm/vit_base_patch16_224: not in the Hugging Face cache (" +
                (home_ / "hub" / "models--timm--vit_base_patch16_224").string() +
                ", revision main); fetch it with: huggingface-cli download "
                "timm/vit_base_patch16_224 (HF_HUB_OFFLINE is set, so vit does not download it)");
  ::unsetenv("HF_HUB_OFFLINE");
  for (const char* bad :
       {"hf-hub:vit_base", "hf-hub:a/b/c", "hf-hub:/b", "hf-hub:a/", "hf-hub:a/b@", "hf-hub:../x"})
    EXPECT_EQ(error_of([&] { resolve_hf_hub(bad); }),
              std::string(bad) + ": expected hf-hub:ORG/NAME or hf-hub:ORG/NAME@REVISION")
        << bad;
}

}  // namespace
}  // namespace vit
