#pragma once
// What one training step holds in memory, from the config alone (vit info
// --batch): the weights, their gradients, the optimizer's state, the copies
// that bf16/fp16 and train.ema add, the step's images, the activations that
// autograd keeps for the backward pass (counted tensor by tensor from the
// block code in src/model/ and the kernels' saved tensors), the backward
// pass's largest working set, and on the CPU the process's resident size
// before training and what the heap keeps beyond the live tensors. On CUDA
// the figure is the caching allocator's peak (max_memory_allocated), which
// has neither; it is arithmetic from the code and has not been measured there.
//
// Shape key: B images in a micro-batch, N tokens, Nq query rows, D width,
// I = H*Dh the attention's width, H heads, M MLP width, K classes, C
// channels, S image side.
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

// The process's resident size before training allocates, on the CPU: the
// libraries (LibTorch, OpenBLAS, oneDNN, OpenCV), their thread pools and the
// heap they start with. Measured, not derived: the peak a `vit train` run
// reports for a model of a few hundred parameters on 8 images (Debian's
// LibTorch 1.13, 2 threads: 177 MiB; `vit info` alone peaks at 163 MiB).
inline constexpr int64_t kCpuRuntimeBytes = int64_t{177} << 20;

// The step's memory at `batch` images per optimizer step, with the config's
// train.accum_steps, train.grad_checkpointing, train.optimizer and train.ema.
// Throws vit::Error for a batch below 1 or one that accum_steps does not
// divide. train.freeze is not modelled: every parameter is counted as trained.
MemoryEstimate estimate_step_memory(const Config& config, int64_t batch,
                                    const MemoryTarget& target);

// Throws vit::Error for a batch below 1 or one that train.accum_steps does
// not divide (the batch of estimate_step_memory).
void check_step_batch(const TrainConfig& train, int64_t batch);

// The parameters the bf16/fp16 weight copies hold (train/weight_mirror.hpp):
// the linear layers' and the patch projection's weights and biases.
int64_t matrix_product_parameters(const ModelConfig& m);

// Bytes autograd keeps for one image in one block that computes `rows` query
// rows (N, or 1 for the last block when the head reads the class token
// alone), at `activation_bytes` per element (4, or 2 under bf16/fp16) with
// the residual stream at `stream_bytes`.
int64_t block_saved_bytes_per_image(const ModelConfig& m, int64_t rows, int64_t activation_bytes,
                                    int64_t stream_bytes, bool cuda);

}  // namespace vit
