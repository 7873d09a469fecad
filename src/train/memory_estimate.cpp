// Shape key: B images in a micro-batch, N tokens, Nq query rows, D width,
// I = H*Dh the attention's width, H heads, M MLP width, K classes, C
// channels, S image side.
//
// The activations are counted tensor by tensor from the block code in src/model/
// and the kernels' saved tensors. On CUDA the caching allocator's peak has neither
// the process's baseline nor the heap's overhead; the figure is arithmetic from the
// code and has not been measured there.
//
// kCpuRuntimeBytes: the libraries (LibTorch, OpenBLAS, oneDNN, OpenCV), their
// thread pools and heap, measured as the peak a `vit train` run reports for a model
// of a few hundred parameters on 8 images (Debian's LibTorch 1.13, 2 threads:
// 177 MiB; `vit info` alone peaks at 163 MiB).
#include "vit/train/memory_estimate.hpp"

#include <algorithm>
#include <numeric>

#include <fmt/format.h>
#include <torch/version.h>

#include "vit/allocator.hpp"
#include "vit/cpu_isa.hpp"
#include "vit/enum_names.hpp"
#include "vit/error.hpp"
#include "vit/model/vision_transformer.hpp"

namespace vit {
namespace {

constexpr int64_t kFloat = 4;      // fp32 bytes
constexpr int64_t kNormStats = 8;  // a LayerNorm's mean and 1/std per row, fp32, kept for backward

// Bytes per element of the step's tensors.
struct Widths {
  int64_t activation;  // what the matrix products read and keep: 2 under bf16/fp16 autocast
  int64_t stream;      // the residual stream: fp32 under autocast, bf16 end to end on CUDA
};

Widths widths_of(const Config& config, const MemoryTarget& target) {
  if (target.precision == Precision::kFp32) return {kFloat, kFloat};
  // train.bf16_activations: bf16 from end to end on CUDA (train/weight_mirror).
  const bool end_to_end =
      target.cuda && target.precision == Precision::kBf16 && config.train.bf16_activations;
  return {2, end_to_end ? 2 : kFloat};
}

// The MLP's tensors kept per query row: GELU's slope (our kernel keeps
// gelu'(h + b) instead of h) or torch::gelu's input, and fc2's input;
// QuickGELU (x * sigmoid(1.702 x)) keeps x, the sigmoid and the product.
// Dropout keeps its mask beside the dropped hidden, which replaces the
// hidden as fc2's input.
int64_t mlp_saved_per_row(const ModelConfig& m, int64_t a) {
  const int64_t kept = m.act_layer == Activation::kQuickGelu ? 3 : 2;
  return a * m.mlp_dim * (kept + (m.dropout > 0 ? 1 : 0));
}

// One image of the step's batch: C x S x S in fp32.
int64_t image_bytes(const ModelConfig& m) {
  return kFloat * m.channels * m.image_size * m.image_size;
}

}  // namespace

int64_t block_saved_bytes_per_image(const ModelConfig& m, int64_t rows, int64_t a, int64_t s,
                                    bool cuda) {
  const int64_t N = m.tokens(), D = m.dim, I = m.inner_dim(), H = m.heads;
  // Every token: the block's input (norm1 keeps it, with its statistics),
  // norm1's output (qkv's input), and the keys and values.
  const int64_t per_token = s * D + kNormStats + a * D + 2 * a * I;
  // Every query row: q; the merged heads (proj's input); the stream after
  // the attention (norm2 keeps it); norm2's output (fc1's input); the MLP.
  int64_t per_row = a * I + a * I + s * D + kNormStats + a * D + mlp_saved_per_row(m, a);
  if (cuda) {
    // SDPA keeps its output and the rows' log-sum-exp, not the probabilities.
    per_row += a * I + kFloat * H;
  } else {
    // The explicit softmax keeps the probabilities (B, H, Nq, N) for both
    // of its backward products; attention dropout adds its mask and the
    // dropped probabilities.
    per_row += a * H * N * (m.attn_dropout > 0 ? 3 : 1);
  }
  if (m.dropout > 0) per_row += 2 * a * D;  // proj's and fc2's dropout masks
  if (m.layer_scale())
    per_row += 2 * a * D;  // each LayerScale keeps its input for gamma's gradient
  // drop-path keeps a (B, 1, 1) mask: nothing per row.
  return N * per_token + rows * per_row;
}

int64_t matrix_product_parameters(const ModelConfig& m) {
  const int64_t D = m.dim;
  const int64_t norm = 2 * D;
  const int64_t norms =
      m.depth * 2 * norm + norm + (m.pre_norm ? norm : 0) + (m.pool == Pool::kMap ? norm : 0);
  const int64_t embeddings = (m.prefix_tokens() + m.position_rows()) * D;
  const int64_t layer_scale = m.layer_scale() ? m.depth * 2 * D : 0;
  const int64_t latent = m.pool == Pool::kMap ? D : 0;
  return count_parameters(m) - norms - embeddings - layer_scale - latent;
}

namespace {

// Whether the last block computes the class token's row alone: the model's
// forward does so when the head reads nothing else (vision_transformer.cpp).
int64_t last_block_rows(const ModelConfig& m) {
  return m.pool == Pool::kCls && !m.distilled ? 1 : m.tokens();
}

int64_t rows_of_block(const ModelConfig& m, int64_t block) {
  return block + 1 == m.depth ? last_block_rows(m) : m.tokens();
}

// Kept per image outside the blocks: the patches cut out and flattened (the
// patch projection's input, in the autocast dtype), the embedding dropout's
// mask, norm_pre's input, the final norm's input for the rows the head reads,
// fc_norm's input, the head's input and the loss's log-probabilities.
int64_t outside_blocks_per_image(const ModelConfig& m, Widths w) {
  const int64_t N = m.tokens(), D = m.dim;
  int64_t bytes = w.activation * m.channels * m.image_size * m.image_size;
  if (m.emb_dropout > 0) bytes += w.stream * N * D;
  if (m.pre_norm) bytes += N * (w.stream * D + kNormStats);
  bytes += last_block_rows(m) * (w.stream * D + kNormStats);
  if (m.fc_norm) bytes += w.stream * D + kNormStats;
  bytes += w.activation * D + 2 * kFloat * m.num_classes;
  return bytes;
}

// The activations of one micro-batch: every block's, or only the input of
// a checkpointed block, which the backward pass recomputes.
int64_t activation_bytes(const ModelConfig& m, const GradCheckpointing& checkpointing,
                         int64_t images, Widths w, bool cuda) {
  int64_t per_image = outside_blocks_per_image(m, w);
  for (int64_t i = 0; i < m.depth; ++i)
    per_image +=
        checkpointing.covers(i)
            ? w.stream * m.tokens() * m.dim
            : block_saved_bytes_per_image(m, rows_of_block(m, i), w.activation, w.stream, cuda);
  return images * per_image;
}

// A checkpointed block's activations while the backward pass recomputes it:
// the largest of the blocks it covers, one at a time.
int64_t recompute_bytes(const ModelConfig& m, const GradCheckpointing& checkpointing,
                        int64_t images, Widths w, bool cuda) {
  int64_t largest = 0;
  for (int64_t i = 0; i < m.depth; ++i)
    if (checkpointing.covers(i))
      largest = std::max(largest, block_saved_bytes_per_image(m, rows_of_block(m, i), w.activation,
                                                              w.stream, cuda));
  return images * largest;
}

// The backward pass's working set in one full block, beside what it keeps:
// the stream's gradient and the one added to it, and the larger of the MLP's
// two (B, N, M) gradients (fc2's input's, then the GELU's) and the
// attention's (B, H, N, N) gradients of the probabilities and the scores with
// v's (SDPA on CUDA: the gradients of q, k and v).
int64_t backward_bytes(const ModelConfig& m, int64_t images, Widths w, bool cuda) {
  const int64_t N = m.tokens(), D = m.dim, I = m.inner_dim(), H = m.heads;
  const int64_t mlp = 2 * w.activation * m.mlp_dim;
  const int64_t attention =
      cuda ? 3 * w.activation * I : 2 * w.activation * H * N + w.activation * I;
  return images * N * (2 * w.stream * D + std::max(mlp, attention));
}

// Stream-wide tensors, (B, N, D) or (B, N, I), that a block's forward pass
// makes and frees: the attention's product before its heads are merged into
// a copy, and each branch's output before the residual add (with drop-path,
// also the output times its mask; with dropout, the output before it). The
// embedding frees one too: the tokens before the positions are added.
// (AMX's attention kernel writes the merged heads directly; its one tensor
// fewer is left in.) A last block that computes the class token's row
// alone frees rows, not stream-wide tensors.
int64_t freed_stream_tensors(const ModelConfig& m) {
  int64_t count = 1;
  for (int64_t i = 0; i < m.depth; ++i) {
    if (rows_of_block(m, i) != m.tokens()) continue;
    const bool drop_path = m.drop_path > 0 && i > 0;  // the rate rises from 0 at block 0
    count += 1 + 2 * (1 + (drop_path ? 1 : 0) + (m.dropout > 0 ? 1 : 0));
  }
  return count;
}

// On the CPU, what glibc's heap keeps beyond the live tensors. Under the
// process's malloc settings (allocator.hpp) blocks under 32 MiB come from
// the heap and stay resident once freed, so the resident peak exceeds the
// tensors' own. This is a model of that excess, not glibc's arithmetic:
// each stream-wide tensor a block's forward pass frees counts as lost, as
// if split by the small requests that best fit hands the smallest free
// blocks (LayerNorm's statistics, autograd's nodes), while the larger
// transients (the qkv product, the scores) are reused whole by the next
// block's. Checked on ViT-Ti/16 and ViT-S/16 at 224 px (docs/training.md,
// "When it does not fit"): the tensors alone come within 5% of the peak
// measured with every block mmap()ed, and the totals within 25% of the
// peak as vit trains (0.89 to 1.21 of it).
int64_t heap_retention_bytes(const ModelConfig& m, int64_t images, Widths w) {
  const int64_t stream_tensor = images * m.tokens() * std::max(m.dim, m.inner_dim()) * w.activation;
  if (stream_tensor >= kLargestMmapThreshold) return 0;  // mmap()ed: unmapped when freed
  return freed_stream_tensors(m) * stream_tensor;
}

// The optimizer's state per parameter (train/optimizer.cpp): AdamW's two
// moments, SGD's momentum. LibTorch 1.13's whole-vector AdamW also makes a
// denominator on CPUs where kernels/adamw does not run (no AVX2).
int64_t optimizer_bytes(const TrainConfig& train, int64_t parameters, bool cuda) {
  if (train.optimizer == OptimizerRule::kSgd) return kFloat * parameters;
  bool scratch = false;
#if TORCH_VERSION_MAJOR < 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR < 4)
  scratch = !cuda && cpu_isa() == CpuIsa::kBaseline;
#else
  (void)cuda;
#endif
  return kFloat * parameters * (scratch ? 3 : 2);
}

}  // namespace

void check_step_batch(const TrainConfig& train, int64_t batch) {
  if (batch < 1)
    throw Error(fmt::format("batch {}: expected at least 1 image per optimizer step", batch));
  if (batch % train.accum_steps != 0)
    throw Error(fmt::format(
        "batch {}: train.accum_steps {} does not divide it (each of the {} micro-batches "
        "must have the same number of images)",
        batch, train.accum_steps, train.accum_steps));
}

int64_t MemoryEstimate::total_bytes() const {
  return std::accumulate(parts.begin(), parts.end(), int64_t{0},
                         [](int64_t sum, const MemoryPart& p) { return sum + p.bytes; });
}

int64_t MemoryEstimate::bytes_of(const std::string& key) const {
  for (const auto& p : parts)
    if (p.key == key) return p.bytes;
  return 0;
}

MemoryEstimate estimate_step_memory(const Config& config, int64_t batch,
                                    const MemoryTarget& target) {
  const TrainConfig& train = config.train;
  const ModelConfig& m = config.model;
  if (target.precision == Precision::kAuto)
    throw Error("memory estimate: resolve train.precision auto first (choose_precision)");
  check_step_batch(train, batch);
  MemoryEstimate e;
  e.batch = batch;
  e.micro_batch = batch / train.accum_steps;
  e.precision = target.precision;
  e.checkpoint_every = train.grad_checkpointing.every;
  const Widths w = widths_of(config, target);
  const int64_t parameters = count_parameters(m), images = e.micro_batch;
  const auto add = [&](const char* key, std::string label, int64_t bytes) {
    if (bytes > 0) e.parts.push_back({key, std::move(label), bytes});
  };
  if (!target.cuda) add("runtime", "runtime (LibTorch and its threads)", kCpuRuntimeBytes);
  add("weights", "weights (fp32)", kFloat * parameters);
  add("gradients", "gradients (fp32)", kFloat * parameters);
  add("optimizer", fmt::format("optimizer state ({})", enum_name(train.optimizer)),
      optimizer_bytes(train, parameters, target.cuda));
  if (target.precision != Precision::kFp32) {
    // The copy and its gradients, of every parameter when bf16 runs end to end.
    const int64_t mirrored = w.stream == 2 ? parameters : matrix_product_parameters(m);
    add("low_precision_weights", fmt::format("{} weight copies", enum_name(target.precision)),
        2 * 2 * mirrored);
  }
  if (train.ema) add("ema", "EMA weights (fp32)", kFloat * parameters);
  // Eagerly the step asks for one micro-batch at a time; a CUDA graph copies
  // all of them into its buffers first.
  const int64_t held = target.cuda && train.cuda_graph ? batch : images;
  add("images",
      fmt::format("images ({} x {}x{}x{} fp32)", held, m.channels, m.image_size, m.image_size),
      held * image_bytes(m));
  add("activations", fmt::format("activations ({} images)", images),
      activation_bytes(m, train.grad_checkpointing, images, w, target.cuda));
  add("recompute", "a checkpointed block, recomputed",
      recompute_bytes(m, train.grad_checkpointing, images, w, target.cuda));
  add("backward", "backward working set", backward_bytes(m, images, w, target.cuda));
  if (!target.cuda) add("heap", "heap kept by malloc", heap_retention_bytes(m, images, w));
  return e;
}

}  // namespace vit
