// The step's memory estimate against the arithmetic done by hand for a small
// model: every part to the byte, and what checkpointing, accumulation,
// bf16, SGD and the EMA change.
#include "vit/train/memory_estimate.hpp"

#include <gtest/gtest.h>
#include <torch/version.h>

#include "error_of.hpp"
#include "vit/cpu_isa.hpp"
#include "vit/model/vision_transformer.hpp"
#include "vit_test_paths.hpp"

namespace vit {
namespace {

// 32 px in 8 px patches: N = 16 + 1 = 17 tokens; D = I = 16, H = 2, M = 32,
// K = 10, two blocks, the last one computing the class token's row alone.
Config small_config() {
  Config c;
  c.model.image_size = 32;
  c.model.patch_size = 8;
  c.model.channels = 3;
  c.model.num_classes = 10;
  c.model.dim = 16;
  c.model.depth = 2;
  c.model.heads = 2;
  c.model.mlp_dim = 32;
  c.train.batch_size = 4;
  return c;
}

constexpr MemoryTarget kCpuFp32{Precision::kFp32, /*cuda=*/false};

// patch 3*8*8*16 + 16 = 3088; cls + pos (1 + 17) * 16 = 288; per block two
// norms 64, attention 16*48 + 48 + 16*16 + 16 = 1088, MLP 16*32 + 32 + 32*16
// + 16 = 1072; final norm 32; head 16*10 + 10 = 170.
constexpr int64_t kParameters = 3088 + 288 + 2 * (64 + 1088 + 1072) + 32 + 170;  // 8026

// AdamW's moments, plus LibTorch 1.13's denominator where kernels/adamw cannot run.
int64_t adamw_buffers() {
#if TORCH_VERSION_MAJOR < 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR < 4)
  if (cpu_isa() == CpuIsa::kBaseline) return 3;
#endif
  return 2;
}

// fp32, per image. Block 0 (all 17 rows): per token the input 64 + its norm
// statistics 8 + norm1's output 64 + k and v 128 = 264; per row q 64 +
// merged heads 64 + the stream after attention 64 + statistics 8 + norm2's
// output 64 + the GELU's slope and output 2 * 128 + probabilities 2 * 17 * 4
// = 656. Block 1 computes one row. Outside the blocks: the flattened patches
// 3 * 32 * 32 * 4 = 12288, the final norm's row 64 + 8, the head's input 64,
// the loss's logits and log-probabilities 2 * 10 * 4.
constexpr int64_t kBlock0 = 17 * 264 + 17 * 656;  // 15640
constexpr int64_t kBlock1 = 17 * 264 + 1 * 656;   // 5144
constexpr int64_t kOutside = 12288 + 72 + 64 + 80;
constexpr int64_t kActivationsPerImage = kBlock0 + kBlock1 + kOutside;  // 33288

TEST(MemoryEstimate, EveryPartToTheByteForASmallModel) {
  ASSERT_EQ(count_parameters(small_config().model), kParameters);
  const MemoryEstimate e = estimate_step_memory(small_config(), /*batch=*/4, kCpuFp32);
  EXPECT_EQ(e.batch, 4);
  EXPECT_EQ(e.micro_batch, 4);
  EXPECT_EQ(e.bytes_of("runtime"), kCpuRuntimeBytes);
  EXPECT_EQ(e.bytes_of("weights"), kParameters * 4);
  EXPECT_EQ(e.bytes_of("gradients"), kParameters * 4);
  EXPECT_EQ(e.bytes_of("optimizer"), kParameters * 4 * adamw_buffers());
  EXPECT_EQ(e.bytes_of("low_precision_weights"), 0);
  EXPECT_EQ(e.bytes_of("ema"), 0);
  EXPECT_EQ(e.bytes_of("images"), 4 * 3 * 32 * 32 * 4);
  EXPECT_EQ(e.bytes_of("activations"), 4 * kActivationsPerImage);
  EXPECT_EQ(e.bytes_of("recompute"), 0);
  // The stream's two gradients 2 * 64 beside the larger of the MLP's 2 * 128
  // and the attention's probabilities' and scores' 2 * 2 * 17 * 4 with v's 64.
  EXPECT_EQ(e.bytes_of("backward"), 4 * 17 * (128 + 336));
  // Freed stream-wide (4, 17, 16) fp32 tensors: the embedding's one, block
  // 0's merged-heads product and its two branch outputs (block 1 works on one row).
  EXPECT_EQ(e.bytes_of("heap"), 4 * (4 * 17 * 16 * 4));
  int64_t sum = 0;
  for (const auto& p : e.parts)
    sum += p.bytes;
  EXPECT_EQ(e.total_bytes(), sum);
}

// A checkpointed block keeps its input alone, (17, 16) fp32 an image, and
// the backward pass holds one block's activations again while it recomputes it.
TEST(MemoryEstimate, CheckpointingKeepsEachBlocksInputAndRecomputesTheLargest) {
  Config c = small_config();
  c.train.grad_checkpointing.every = 1;
  const MemoryEstimate e = estimate_step_memory(c, 4, kCpuFp32);
  EXPECT_EQ(e.checkpoint_every, 1);
  EXPECT_EQ(e.bytes_of("activations"), 4 * (kOutside + 2 * 17 * 16 * 4));
  EXPECT_EQ(e.bytes_of("recompute"), 4 * kBlock0);
  // Every other block (0 only): block 1 keeps all it would.
  c.train.grad_checkpointing.every = 2;
  const MemoryEstimate every_2 = estimate_step_memory(c, 4, kCpuFp32);
  EXPECT_EQ(every_2.bytes_of("activations"), 4 * (kOutside + 17 * 16 * 4 + kBlock1));
  EXPECT_EQ(every_2.bytes_of("recompute"), 4 * kBlock0);
}

// ViT-S/16 at 224 px, fp32: a full block keeps 197 x (6152 + 23168) bytes an
// image (per token 4*384 + 8 + 4*384 + 8*384; per row 16*384 + 8 + 8*1536 +
// 4*6*197), and a checkpointed one 197 x 384 x 4: 19 times less.
TEST(MemoryEstimate, CheckpointingViTS16KeepsANineteenthOfABlock) {
  Config c = load_config(std::string(VIT_SOURCE_DIR) + "/configs/imagenet-vit-s16.json");
  const ModelConfig& m = c.model;
  const int64_t full = block_saved_bytes_per_image(m, 197, 4, 4, /*cuda=*/false);
  EXPECT_EQ(full, 197 * (6152 + 23168));
  EXPECT_NEAR(double(full) / double(197 * 384 * 4), 19.09, 0.01);
  const int64_t without = estimate_step_memory(c, 64, kCpuFp32).bytes_of("activations");
  c.train.grad_checkpointing.every = 1;
  const int64_t with = estimate_step_memory(c, 64, kCpuFp32).bytes_of("activations");
  // 11 full blocks and the class token's block against 12 inputs, with the
  // same patches and head outside the blocks.
  const int64_t outside = 64 * (3 * 224 * 224 * 4 + 384 * 4 + 8 + 384 * 4 + 2 * 1000 * 4);
  const int64_t last = 64 * block_saved_bytes_per_image(m, 1, 4, 4, false);
  EXPECT_EQ(without, outside + 11 * 64 * full + last);
  EXPECT_EQ(with, outside + 12 * 64 * 197 * 384 * 4);
}

// The heap's share, ViT-S/16 with drop-path 0.1: the embedding's freed
// tokens, block 0's merged-heads product and two branch outputs, five in each
// of blocks 1 to 10 (drop-path adds each branch's masked output), none in
// the class token's block; (64, 197, 384) fp32 is 18.5 MiB, under the 32 MiB
// mmap threshold. At 128 images it is 37 MiB: mmap()ed, given back when freed.
TEST(MemoryEstimate, TheHeapKeepsTheFreedStreamTensorsUnderTheMmapThreshold) {
  const Config c = load_config(std::string(VIT_SOURCE_DIR) + "/configs/imagenet-vit-s16.json");
  EXPECT_EQ(estimate_step_memory(c, 64, kCpuFp32).bytes_of("heap"),
            (1 + 3 + 10 * 5) * int64_t{64 * 197 * 384 * 4});
  EXPECT_EQ(estimate_step_memory(c, 128, kCpuFp32).bytes_of("heap"), 0);
}

// Accumulation divides the batch among micro-batches: the activations and
// the images are one micro-batch's (the step asks for them one at a time).
TEST(MemoryEstimate, AccumulationDividesTheActivations) {
  Config c = small_config();
  const MemoryEstimate whole = estimate_step_memory(c, 8, kCpuFp32);
  c.train.accum_steps = 2;
  const MemoryEstimate split = estimate_step_memory(c, 8, kCpuFp32);
  EXPECT_EQ(split.micro_batch, 4);
  EXPECT_EQ(whole.bytes_of("activations"), 8 * kActivationsPerImage);
  EXPECT_EQ(split.bytes_of("activations"), 4 * kActivationsPerImage);
  EXPECT_EQ(split.bytes_of("backward") * 2, whole.bytes_of("backward"));
  EXPECT_EQ(split.bytes_of("images") * 2, whole.bytes_of("images"));
  EXPECT_EQ(split.bytes_of("weights"), whole.bytes_of("weights"));
}

// bf16 keeps the matrix products' inputs in 2 bytes and the stream in fp32,
// and adds bf16 copies of the linear and patch weights with their gradients.
TEST(MemoryEstimate, Bf16HalvesTheProductsInputsAndAddsTheWeightCopies) {
  const Config c = small_config();
  const MemoryEstimate e = estimate_step_memory(c, 4, {Precision::kBf16, false});
  // All but the norms (2 blocks x 2 x 32, final 32) and the embeddings (288).
  EXPECT_EQ(matrix_product_parameters(c.model), kParameters - 160 - 288);
  EXPECT_EQ(e.bytes_of("low_precision_weights"), 4 * (kParameters - 160 - 288));
  // Block 0 in bf16: per token 64 + 8 + 32 + 64 = 168; per row 32 + 32 + 64
  // + 8 + 32 + 128 + 2 * 17 * 2 = 364.
  EXPECT_EQ(block_saved_bytes_per_image(c.model, 17, 2, 4, false), 17 * 168 + 17 * 364);
  EXPECT_LT(e.bytes_of("activations"),
            estimate_step_memory(c, 4, kCpuFp32).bytes_of("activations"));
  // The freed branch outputs are bf16 too: the heap's four (4, 17, 16) tensors in 2 bytes.
  EXPECT_EQ(e.bytes_of("heap"), 4 * (4 * 17 * 16 * 2));
}

TEST(MemoryEstimate, SgdKeepsOneBufferAndTheEmaACopy) {
  Config c = small_config();
  c.train.optimizer = OptimizerRule::kSgd;
  c.train.ema = ModelEmaConfig{};
  const MemoryEstimate e = estimate_step_memory(c, 4, kCpuFp32);
  EXPECT_EQ(e.bytes_of("optimizer"), kParameters * 4);
  EXPECT_EQ(e.bytes_of("ema"), kParameters * 4);
}

// On CUDA, SDPA keeps its output and log-sum-exp instead of the
// probabilities, and the device's peak has no process baseline or heap.
TEST(MemoryEstimate, OnCudaNoProbabilitiesNoRuntimeNoHeap) {
  const Config c = small_config();
  const MemoryEstimate e = estimate_step_memory(c, 4, {Precision::kFp32, /*cuda=*/true});
  EXPECT_EQ(e.bytes_of("runtime"), 0);
  EXPECT_EQ(e.bytes_of("heap"), 0);
  // Per row: 656 - 136 (probabilities) + 64 (SDPA's output) + 2 * 4 (log-sum-exp).
  EXPECT_EQ(block_saved_bytes_per_image(c.model, 17, 4, 4, true), 17 * 264 + 17 * 592);
}

TEST(MemoryEstimate, RefusesABatchThatCannotBeStepped) {
  Config c = small_config();
  EXPECT_EQ(testing::error_of([&] { estimate_step_memory(c, 0, kCpuFp32); }),
            "batch 0: expected at least 1 image per optimizer step");
  EXPECT_EQ(testing::error_of([&] { estimate_step_memory(c, -8, kCpuFp32); }),
            "batch -8: expected at least 1 image per optimizer step");
  c.train.accum_steps = 4;
  EXPECT_EQ(testing::error_of([&] { estimate_step_memory(c, 6, kCpuFp32); }),
            "batch 6: train.accum_steps 4 does not divide it (each of the 4 micro-batches must "
            "have the same number of images)");
  EXPECT_EQ(testing::error_of([&] {
              estimate_step_memory(c, 8, {Precision::kAuto, false});
            }),
            "memory estimate: resolve train.precision auto first (choose_precision)");
}

}  // namespace
}  // namespace vit
