#pragma once
// A small, learnable dataset for trainer tests: four textures on noisy 8x8
// gray images (row stripes, column stripes, checkerboard, flat). Every patch
// holds the class, so a one-block ViT learns it in a few dozen steps.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "error_of.hpp"

#include "vit/config.hpp"
#include "vit/data/dataset.hpp"
#include "vit/train/optimizer.hpp"
#include "vit/train/trainer.hpp"
#include "vit/train/training_checkpoint.hpp"

namespace vit::testing {

inline data::Dataset texture_dataset(int64_t n, uint64_t seed) {
  auto generator = at::detail::createCPUGenerator(seed);
  data::Dataset d;
  d.labels = torch::arange(n, torch::kLong) % 4;
  const auto rows = torch::arange(8).view({8, 1}).expand({8, 8});
  const auto cols = torch::arange(8).view({1, 8}).expand({8, 8});
  const std::vector<torch::Tensor> textures = {(rows % 2) * 150, (cols % 2) * 150,
                                               ((rows + cols) % 2) * 150,
                                               torch::full({8, 8}, 75, torch::kLong)};
  auto images = torch::randint(0, 80, {n, 1, 8, 8}, generator, torch::kLong);
  for (int64_t i = 0; i < n; ++i)
    images[i][0] += textures[d.labels[i].item<int64_t>()];
  d.images = images.to(torch::kUInt8).contiguous();
  d.classes = {"rows", "columns", "checkers", "flat"};
  d.source = "synthetic textures";
  return d;
}

inline Config texture_config() {
  Config c;
  c.name = "quadrants";
  c.model.image_size = 8;
  c.model.patch_size = 4;
  c.model.channels = 1;
  c.model.num_classes = 4;
  c.model.dim = 16;
  c.model.depth = 1;
  c.model.heads = 2;
  c.model.mlp_dim = 32;
  c.data.dataset = DatasetKind::kMnist;
  c.data.mean = {0.3};
  c.data.std = {0.3};
  c.data.augment.crop_padding = 0;
  c.data.augment.hflip = false;
  // fp32 on every host: "auto" picks bf16 on CPUs that compute it, and the
  // tests' expected values are fp32's. Tests of other precisions set them.
  c.train.precision = Precision::kFp32;
  c.train.batch_size = 16;
  c.train.epochs = 6;
  c.train.lr = 3e-3;
  c.train.warmup_epochs = 0.5;
  c.train.early_stop_patience = 0;
  c.validate();
  return c;
}

// An untrained model of texture_config() saved as a training checkpoint
// (weights, optimizer state, meta with classes a..d).
inline void save_texture_checkpoint(const std::string& path) {
  const Config c = texture_config();
  VisionTransformer model(c.model);
  auto optimizer = make_optimizer(model, c.train);
  CheckpointMeta meta;
  meta.config = c;
  meta.class_names = {"a", "b", "c", "d"};
  save_training_checkpoint(path, model, *optimizer, meta);
}

inline data::DataSplits texture_splits() {
  return {texture_dataset(192, 1),
          texture_dataset(64, 2),
          texture_dataset(64, 3),
          {0.3},
          {0.3},
          std::nullopt};
}

// Fits a fresh trainer of texture_config() whose final norm weight is 1e21:
// the loss stays finite, but the head's gradient (~1e21 per entry) overflows
// the fp32 sum of squares behind the global norm. The run must stop naming
// step 1, with the weights untouched by the optimizer.
inline void expect_an_infinite_norm_stops_at_step_1(Trainer& trainer) {
  torch::Tensor head_before;
  {
    torch::NoGradGuard no_grad;
    trainer.model()->norm->weight.fill_(1e21);
    head_before = trainer.model()->head->weight.clone();
  }
  EXPECT_EQ(error_of([&] { trainer.fit(); }),
            "gradient norm is inf at step 1 (epoch 1); stopping. No checkpoint was written "
            "before it");
  EXPECT_TRUE(torch::equal(trainer.model()->head->weight, head_before));
}

}  // namespace vit::testing
