#pragma once
// What one training step holds in memory, from the config alone (vit info --batch):
// weights, gradients, optimizer state, the copies bf16/fp16 and train.ema add, the
// images, the activations autograd keeps, the backward pass's largest working set,
// and on the CPU the process's baseline and heap overhead. On CUDA the figure is the
// caching allocator's peak (max_memory_allocated), derived, not measured.
#include <cstdint>
#include <string>
#include <vector>

#include "vit/config.hpp"

namespace vit {

// Where the step runs, as far as its memory goes.
struct MemoryTarget {
  Precision precision = Precision::kFp32;  // as the step runs it: fp32, bf16 or fp16 (not auto)
  bool cuda = false;                       // CUDA: SDPA's attention, no process baseline
};

// One line of the estimate.
struct MemoryPart {
  std::string key;    // the JSON name without "_mib": "weights", "activations", ...
  std::string label;  // for people: "weights (fp32)"
  int64_t bytes = 0;
};

struct MemoryEstimate {
  int64_t batch = 0;        // images per optimizer step
  int64_t micro_batch = 0;  // images per forward pass: batch / train.accum_steps
  Precision precision = Precision::kFp32;
  int64_t checkpoint_every = 0;  // train.grad_checkpointing: 0 none, 1 every block, k
  std::vector<MemoryPart> parts;

  int64_t total_bytes() const;
  int64_t bytes_of(const std::string& key) const;  // 0 for a part that is not there
};

// The process's resident size on the CPU before training allocates: the libraries,
// their thread pools and starting heap. Measured (Debian's LibTorch 1.13, 2 threads).
inline constexpr int64_t kCpuRuntimeBytes = int64_t{177} << 20;

// The step's memory at `batch` images per optimizer step. Throws as check_step_batch.
// train.freeze is not modelled: every parameter is counted as trained.
MemoryEstimate estimate_step_memory(const Config& config, int64_t batch,
                                    const MemoryTarget& target);

// Throws vit::Error for a batch below 1 or one that train.accum_steps does not divide.
void check_step_batch(const TrainConfig& train, int64_t batch);

// The parameters the bf16/fp16 weight copies hold (train/weight_mirror.hpp).
int64_t matrix_product_parameters(const ModelConfig& m);

// Bytes autograd keeps per image in a block that computes `rows` query rows (N, or 1
// for a last block read by the class token alone), at `activation_bytes` per element
// and `stream_bytes` for the residual stream.
int64_t block_saved_bytes_per_image(const ModelConfig& m, int64_t rows, int64_t activation_bytes,
                                    int64_t stream_bytes, bool cuda);

}  // namespace vit
