// The AMX kernel runs one (batch, head) at a time: each head's rows are packed for
// AMX's tiles straight from the projection with the bias added, the five products
// run on the tiles with the scores and the softmax in the thread's scratch, and
// outputs and gradients (the bias's summed) go straight into the merged and the
// projection's layouts. Why: LibTorch runs these small products slowly and writes
// heads, scores and probabilities to memory between passes (measured:
// docs/benchmarks.md, "Why the own kernels"). bf16 results are rounded by
// vcvtneps2bf16. The model asks attention_from_projection_will_use_own_kernel before
// the projection, so that it splits the heads itself where the kernel will not run.
#include "vit/kernels/attention_from_projection.hpp"

#include <ATen/Parallel.h>
#include <ATen/record_function.h>
#include <torch/autograd.h>
#include <torch/torch.h>

#include "amx/attention_head.hpp"
#include "amx/tiles.hpp"
#include "kernel_operands.hpp"
#include "vit/autocast_state.hpp"

namespace vit {
namespace {

// The projection's layout: (B, N, 3*H*Dh).
struct Layout {
  int64_t batch, tokens, heads, head_dim;

  Layout(const torch::Tensor& qkv, int64_t heads_)
      : batch(qkv.size(0)),
        tokens(qkv.size(1)),
        heads(heads_),
        head_dim(qkv.size(2) / (3 * heads_)) {}
  int64_t width() const { return heads * head_dim; }  // of each part, and of the output
  // Offset of head i's (= b*H + h) first row in part `part` of the projection.
  int64_t offset(int64_t i, int64_t part) const {
    return (i / heads) * tokens * 3 * width() + part * width() + (i % heads) * head_dim;
  }
  // Offset of head i's first row in the merged output.
  int64_t merged_offset(int64_t i) const {
    return (i / heads) * tokens * width() + (i % heads) * head_dim;
  }
};

// No bias: undefined, or empty where it goes through AttentionFromProjection
// (LibTorch 1.13's autograd functions take no undefined tensors).
bool has_bias(const torch::Tensor& bias) {
  return bias.defined() && bias.numel() > 0;
}

template <typename T>
T* at_offset(T* base, int64_t offset) {
  return base == nullptr ? nullptr : base + offset;
}

detail::amx::HeadInputs inputs_of(const torch::Tensor& qkv, const torch::Tensor& bias,
                                  const Layout& l, int64_t i) {
  const auto* x = qkv.data_ptr<c10::BFloat16>();
  const float* b = has_bias(bias) ? bias.data_ptr<float>() : nullptr;
  const int64_t h = (i % l.heads) * l.head_dim;
  return {x + l.offset(i, 0),
          x + l.offset(i, 1),
          x + l.offset(i, 2),
          3 * l.width(),
          at_offset(b, h),
          at_offset(b, l.width() + h),
          at_offset(b, 2 * l.width() + h)};
}

// Runs `work(head, scratch)` for every (batch, head) index, the heads shared
// among LibTorch's threads, each thread with its tiles configured and its
// own scratch.
template <typename Work>
void for_each_head(const Layout& l, double scale, const Work& work) {
  const detail::amx::HeadShape shape{l.tokens, l.head_dim, static_cast<float>(scale)};
  at::parallel_for(0, l.batch * l.heads, /*grain_size=*/1, [&](int64_t begin, int64_t end) {
    detail::amx::HeadScratch scratch(shape);
    detail::amx::TileScope tiles;
    for (int64_t i = begin; i < end; ++i)
      work(i, scratch);
  });
}

// The merged output (B, N, H*Dh); the probabilities (B, H, N, N) where
// `probs` is not null.
torch::Tensor forward_kernel(const torch::Tensor& qkv, const torch::Tensor& bias, int64_t heads,
                             double scale, torch::Tensor* probs) {
  const Layout l(qkv, heads);
  auto out = torch::empty({l.batch, l.tokens, l.width()}, qkv.options());
  if (probs != nullptr) *probs = torch::empty({l.batch, heads, l.tokens, l.tokens}, qkv.options());
  auto* out_data = out.data_ptr<c10::BFloat16>();
  auto* probs_data = probs != nullptr ? probs->data_ptr<c10::BFloat16>() : nullptr;
  for_each_head(l, scale, [&](int64_t i, detail::amx::HeadScratch& s) {
    detail::amx::head_forward(inputs_of(qkv, bias, l, i),
                              at_offset(probs_data, i * l.tokens * l.tokens),
                              out_data + l.merged_offset(i), l.width(), s);
  });
  return out;
}

class AttentionFromProjection : public torch::autograd::Function<AttentionFromProjection> {
 public:
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& qkv,
                               const torch::Tensor& bias, int64_t heads, double scale) {
    torch::Tensor probs;
    auto out = forward_kernel(qkv, bias, heads, scale, &probs);
    ctx->save_for_backward({qkv, bias, probs});
    ctx->saved_data["heads"] = heads;
    ctx->saved_data["scale"] = scale;
    return out;
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    RECORD_FUNCTION("vit::attention_from_projection_backward",
                    std::vector<c10::IValue>({grads[0]}));
    const auto saved = ctx->get_saved_variables();
    const auto &qkv = saved[0], &bias = saved[1], &probs = saved[2];
    const Layout l(qkv, ctx->saved_data["heads"].toInt());
    const auto dout = grads[0].to(torch::kBFloat16).contiguous();
    auto dqkv = torch::empty_like(qkv);
    // Each head's share of the bias's gradient, (B, H, 3, Dh), summed over
    // the batch afterwards: the same sums in the same order on any number of
    // threads.
    torch::Tensor shares;
    if (has_bias(bias)) shares = torch::empty({l.batch, l.heads, 3, l.head_dim}, bias.options());
    const auto* dout_data = dout.data_ptr<c10::BFloat16>();
    const auto* probs_data = probs.data_ptr<c10::BFloat16>();
    auto* dx = dqkv.data_ptr<c10::BFloat16>();
    float* share_data = shares.defined() ? shares.data_ptr<float>() : nullptr;
    for_each_head(l, ctx->saved_data["scale"].toDouble(),
                  [&](int64_t i, detail::amx::HeadScratch& s) {
                    float* share = at_offset(share_data, i * 3 * l.head_dim);
                    const detail::amx::HeadGradients g{dx + l.offset(i, 0),
                                                       dx + l.offset(i, 1),
                                                       dx + l.offset(i, 2),
                                                       3 * l.width(),
                                                       share,
                                                       at_offset(share, l.head_dim),
                                                       at_offset(share, 2 * l.head_dim)};
                    detail::amx::head_backward(dout_data + l.merged_offset(i), l.width(),
                                               inputs_of(qkv, bias, l, i),
                                               probs_data + i * l.tokens * l.tokens, g, s);
                  });
    torch::Tensor dbias;
    if (shares.defined()) dbias = shares.sum(0).transpose(0, 1).reshape({3 * l.width()});
    return {dqkv, dbias, {}, {}};
  }
};

// LibTorch's operators, the softmax in fp32 as the kernel computes it.
torch::Tensor composed(const torch::Tensor& qkv, const torch::Tensor& bias, int64_t heads,
                       double scale) {
  const Layout l(qkv, heads);
  const auto biased =
      bias.defined() ? (qkv.to(bias.scalar_type()) + bias).to(qkv.scalar_type()) : qkv;
  const auto parts = biased.view({l.batch, l.tokens, 3, heads, l.head_dim})
                         .permute({2, 0, 3, 1, 4})  // (3, B, H, N, Dh)
                         .unbind(0);
  const auto probs = torch::softmax(torch::matmul(parts[0], parts[1].transpose(-2, -1)) * scale,
                                    /*dim=*/-1, torch::kFloat);
  return torch::matmul(probs.to(qkv.scalar_type()), parts[2])  // (B, H, N, Dh)
      .transpose(1, 2)
      .reshape({l.batch, l.tokens, l.width()});
}

// The checks both questions share: heads of a width the kernel takes, a bias
// it takes, and AMX's tiles usable.
bool heads_fit(const torch::Tensor& bias, int64_t heads, int64_t head_dim) {
  const bool bias_fits =
      !bias.defined() ||
      (detail::is_contiguous_on_cpu(bias) && bias.scalar_type() == torch::kFloat &&
       bias.dim() == 1 && bias.size(0) == 3 * heads * head_dim);
  return heads > 0 && head_dim > 0 && head_dim % detail::amx::kTileDepth == 0 && bias_fits &&
         detail::amx::tiles_usable();
}

}  // namespace

bool attention_from_projection_uses_own_kernel(const torch::Tensor& qkv, const torch::Tensor& bias,
                                               int64_t heads) {
  if (!detail::is_contiguous_on_cpu(qkv) || qkv.scalar_type() != torch::kBFloat16 ||
      qkv.dim() != 3 || heads <= 0 || qkv.size(2) % (3 * heads) != 0 || qkv.size(1) == 0)
    return false;
  return heads_fit(bias, heads, qkv.size(2) / (3 * heads));
}

bool attention_from_projection_will_use_own_kernel(const torch::Tensor& x,
                                                   const torch::Tensor& bias, int64_t heads,
                                                   int64_t head_dim) {
  const bool bf16_out = x.scalar_type() == torch::kBFloat16 || cpu_autocast_is_bf16();
  return detail::is_dense_on_cpu(x) && x.dim() == 3 && x.size(1) > 0 && bf16_out &&
         heads_fit(bias, heads, head_dim);
}

torch::Tensor attention_from_projection(const torch::Tensor& qkv, const torch::Tensor& bias,
                                        int64_t heads, double scale) {
  RECORD_FUNCTION("vit::attention_from_projection", std::vector<c10::IValue>({qkv}));
  if (!attention_from_projection_uses_own_kernel(qkv, bias, heads))
    return composed(qkv, bias, heads, scale);
  const bool needs_graph = torch::GradMode::is_enabled() &&
                           (qkv.requires_grad() || (bias.defined() && bias.requires_grad()));
  if (!needs_graph) return forward_kernel(qkv, bias, heads, scale, nullptr);
  const auto no_bias = torch::empty({0}, qkv.options().dtype(torch::kFloat));
  return AttentionFromProjection::apply(qkv, bias.defined() ? bias : no_bias, heads, scale);
}

}  // namespace vit
