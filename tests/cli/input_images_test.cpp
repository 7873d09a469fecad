#include "cli/input_images.hpp"

#include <unistd.h>

#include <filesystem>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "trained_checkpoint.hpp"

namespace vit::cli {
namespace {

TEST(ChooseSamples, DistinctSortedAndFixedByTheSeed) {
  const auto chosen = choose_samples(/*available=*/10, /*wanted=*/4, /*seed=*/3);
  ASSERT_EQ(chosen.size(), 4u);
  for (size_t i = 0; i < chosen.size(); ++i) {
    EXPECT_GE(chosen[i], 0);
    EXPECT_LT(chosen[i], 10);
    if (i > 0) {
      EXPECT_LT(chosen[i - 1], chosen[i]);
    }
  }
  EXPECT_EQ(choose_samples(10, 4, 3), chosen);
  EXPECT_NE(choose_samples(10, 4, 4), chosen);
}

TEST(ChooseSamples, AskingForTooManyGivesEverything) {
  EXPECT_EQ(choose_samples(5, 9, 0), (std::vector<int64_t>{0, 1, 2, 3, 4}));
  EXPECT_EQ(choose_samples(5, 5, 1), (std::vector<int64_t>{0, 1, 2, 3, 4}));
  EXPECT_TRUE(choose_samples(0, 3, 0).empty());
}

TEST(ChooseSamples, EveryIndexIsEquallyLikely) {
  // 2000 draws of 3 out of 10: each index is expected 600 times (sd ~20).
  std::vector<int> counts(10, 0);
  for (uint64_t seed = 0; seed < 2000; ++seed)
    for (const int64_t i : choose_samples(10, 3, seed))
      ++counts[i];
  for (int c : counts)
    EXPECT_NEAR(c, 600, 100);
}

TEST(AttentionBatchSize, KeepsAllLayersAttentionWithinTheBudget) {
  ModelConfig cifar;  // 6 layers, 8 heads, 65 tokens: 811,200 bytes an image
  EXPECT_EQ(attention_batch_size(cifar), 64);  // 330 fit in 256 MiB; capped
  EXPECT_EQ(attention_batch_size(cifar, /*budget_bytes=*/811200 * 5), 5);
  EXPECT_EQ(attention_batch_size(cifar, /*budget_bytes=*/1), 1);
  ModelConfig base;  // ViT-B/16 at 224 px: 12 * 12 * 197^2 * 4 = 22,354,560 bytes an image
  base.image_size = 224;
  base.patch_size = 16;
  base.depth = 12;
  base.heads = 12;
  EXPECT_EQ(attention_batch_size(base), 12);
}

// vit report runs seven analyses on one OpenedModel: the dataset is read
// once, and the validation samples come from those splits.
TEST(OpenedModel, ReadsItsDataOnceAndDrawsSamplesFromIt) {
  namespace fs = std::filesystem;
  const fs::path root = fs::temp_directory_path() / ("vit_opened_" + std::to_string(::getpid()));
  testing::write_block_cifar(root);
  const Config config = testing::block_config(root);
  OpenedModel opened(c10::kCPU, LoadedModel{VisionTransformer(config.model), config, {}, "m.pt"});

  const data::DataSplits& first = opened.data();
  EXPECT_EQ(&opened.data(), &first);
  EXPECT_EQ(opened.data().val.images.data_ptr(), first.val.images.data_ptr());
  ASSERT_EQ(first.val.size(), 20);

  const AnalysisInputs inputs = choose_analysis_inputs({}, /*samples=*/3, /*seed=*/5, opened);
  const std::vector<int64_t> chosen = choose_samples(20, 3, 5);
  ASSERT_EQ(inputs.ids.size(), 3u);
  for (size_t i = 0; i < chosen.size(); ++i) {
    EXPECT_EQ(inputs.ids[i], "val:" + std::to_string(chosen[i]));
    EXPECT_TRUE(torch::equal(inputs.pixels[static_cast<int64_t>(i)], first.val.images[chosen[i]]));
    EXPECT_EQ(inputs.labels[static_cast<int64_t>(i)].item<int64_t>(),
              first.val.labels[chosen[i]].item<int64_t>());
  }
  fs::remove_all(root);
}

}  // namespace
}  // namespace vit::cli
