// train/step_profiler: LibTorch's profiler over chosen training steps, its
// operator table and Chrome trace.
#include "vit/train/step_profiler.hpp"

#include <unistd.h>

#include <filesystem>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cli/trained_checkpoint.hpp"
#include "error_of.hpp"
#include "vit/kernels/gelu.hpp"
#include "vit/kernels/head_split.hpp"
#include "vit/kernels/layer_norm.hpp"
#include "vit/kernels/linear.hpp"
#include "vit/kernels/residual_add.hpp"

namespace vit {
namespace {

namespace fs = std::filesystem;

TEST(StepProfiler, TablesEveryOperatorOfTheProfiledStepsWithSelfTimesWithinTotals) {
  const fs::path dir =
      fs::temp_directory_path() / ("vit_step_profiler_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  testing::write_block_cifar(dir / "cifar");
  Config config = testing::block_config(dir / "cifar");  // 2 blocks, 5 steps an epoch
  config.train.epochs = 1;
  Trainer trainer(config, data::load_data(config), c10::kCPU, (dir / "run").string());
  const auto path = (dir / "profile.json").string();
  trainer.profile(StepProfiler(path, /*first=*/1, /*count=*/2));
  trainer.fit();

  const auto table = testing::read_json(path);
  EXPECT_EQ(table["source"], "vit");
  EXPECT_EQ(table["steps"], 2);
  std::map<std::string, nlohmann::json> ops;
  double previous_self = 1e30;
  for (const auto& op : table["ops"]) {
    ops[op["name"]] = op;
    EXPECT_LE(op["self_us_per_step"].get<double>(), op["total_us_per_step"].get<double>() + 1e-6)
        << op["name"];
    EXPECT_GE(op["self_us_per_step"].get<double>(), 0.0) << op["name"];
    EXPECT_LE(op["self_us_per_step"].get<double>(), previous_self);  // sorted by self time
    previous_self = op["self_us_per_step"].get<double>();
  }
  // Each step's forward runs every Linear as one product, the 3-D ones too:
  // the patch embedding, 2 blocks x (qkv, proj, fc1, fc2) and the head = 10 a
  // step. Where kernels/linear runs oneDNN's sgemm, each is a vit::linear, and
  // the last block's qkv two (the class token's q, then k and v): 11, each
  // with its backward. Otherwise each is an addmm, but for the class token's
  // q (a strided row: matmul and add), so 10, less those whose bias our
  // kernels add: proj's and fc2's in the residual add, but for the last
  // block's proj, whose class-token residual is a strided view (3); fc1's in
  // the GELU (2); qkv's in the split into heads (2).
  const auto x = torch::ones({2, 4});
  const bool residual_takes_biases = biased_residual_uses_own_kernel(x, torch::ones({4}));
  const bool gelu_takes_bias = gelu_with_bias_uses_own_kernel(torch::ones({4}));
  const bool split_takes_bias = split_heads_with_bias_uses_own_kernel(torch::ones({4}));
  if (linear_uses_own_kernel(x, torch::ones({4, 4}))) {
    ASSERT_TRUE(ops.count("vit::linear") && ops.count("vit::linear_backward"));
    EXPECT_DOUBLE_EQ(ops["vit::linear"]["calls_per_step"].get<double>(), 11.0);
    EXPECT_DOUBLE_EQ(ops["vit::linear_backward"]["calls_per_step"].get<double>(), 11.0);
    EXPECT_FALSE(ops.count("aten::addmm"));
  } else {
    ASSERT_TRUE(ops.count("aten::addmm"));
    EXPECT_DOUBLE_EQ(ops["aten::addmm"]["calls_per_step"].get<double>(),
                     10.0 - (residual_takes_biases ? 3.0 : 0.0) - (gelu_takes_bias ? 2.0 : 0.0) -
                         (split_takes_bias ? 2.0 : 0.0));
  }
  // Where our residual kernel runs, the first block's two residual adds go
  // with the LayerNorm after them in one pass (kernels/residual_norm); the
  // last block's MLP residual, which no norm of a block follows, alone; and
  // its attention residual (the class token's strided row) in LibTorch's adds.
  if (residual_takes_biases) {
    ASSERT_TRUE(ops.count("vit::biased_residual") && ops.count("vit::residual_norm") &&
                ops.count("vit::residual_norm_backward"));
    EXPECT_DOUBLE_EQ(ops["vit::biased_residual"]["calls_per_step"].get<double>(), 1.0);
    EXPECT_DOUBLE_EQ(ops["vit::residual_norm"]["calls_per_step"].get<double>(), 2.0);
    EXPECT_DOUBLE_EQ(ops["vit::residual_norm_backward"]["calls_per_step"].get<double>(), 2.0);
  }
  // Our LayerNorm and GELU are tabled under their own names (the GELU with
  // fc1's bias where our kernel takes it); their backward passes too where
  // our kernels ran (elsewhere LibTorch's autograd has them). The norms: 2 x 2
  // + the final one, less the two that join a residual add.
  const std::string gelu = gelu_takes_bias ? "vit::gelu_biased" : "vit::gelu";
  const double norms = residual_takes_biases ? 3.0 : 5.0;
  ASSERT_TRUE(ops.count("vit::layer_norm") && ops.count(gelu));
  EXPECT_DOUBLE_EQ(ops["vit::layer_norm"]["calls_per_step"].get<double>(), norms);
  EXPECT_DOUBLE_EQ(ops[gelu]["calls_per_step"].get<double>(), 2.0);
  if (gelu_takes_bias) {
    ASSERT_TRUE(ops.count("vit::gelu_biased_backward"));
    EXPECT_DOUBLE_EQ(ops["vit::gelu_biased_backward"]["calls_per_step"].get<double>(), 2.0);
  }
  if (layer_norm_uses_own_kernel(x, torch::ones({4}), torch::ones({4}))) {
    ASSERT_TRUE(ops.count("vit::layer_norm_backward"));
    EXPECT_DOUBLE_EQ(ops["vit::layer_norm_backward"]["calls_per_step"].get<double>(), norms);
  }
  const auto trace = testing::read_json(path + ".trace.json");
  EXPECT_GT(trace["traceEvents"].size(), 100u);
  EXPECT_EQ(trace["traceEvents"][0]["ph"], "X");
  fs::remove_all(dir);
}

TEST(StepProfiler, NeedsAtLeastOneStep) {
  EXPECT_EQ(testing::error_of([] { StepProfiler("p.json", 10, 0); }),
            "--profile-steps 0 after step 10: expected at least 1 step");
}

}  // namespace
}  // namespace vit
