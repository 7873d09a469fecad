#include "vit/kernels/attention.hpp"

#include <ATen/Parallel.h>
#include <ATen/record_function.h>
#include <torch/autograd.h>
#include <torch/torch.h>

#include "amx/attention_head.hpp"
#include "amx/tiles.hpp"
#include "kernel_operands.hpp"

namespace vit {
namespace {

// The widest head the kernel's scratch takes (amx/attention_head's packing).
constexpr int64_t kMaxHeadDim = 512;

detail::amx::HeadShape shape_of(const torch::Tensor& q, const torch::Tensor& k, double scale) {
  return {q.size(2), k.size(2), q.size(3), static_cast<float>(scale)};
}

const c10::BFloat16* head_of(const torch::Tensor& t, int64_t index) {
  return t.data_ptr<c10::BFloat16>() + index * t.size(2) * t.size(3);
}

c10::BFloat16* head_of(torch::Tensor& t, int64_t index) {
  return t.data_ptr<c10::BFloat16>() + index * t.size(2) * t.size(3);
}

// Runs `work(head, scratch)` for every (batch, head) index, the heads shared
// among LibTorch's threads, each thread with its tiles configured and its
// own scratch.
template <typename Work>
void for_each_head(int64_t heads, const detail::amx::HeadShape& shape, const Work& work) {
  at::parallel_for(0, heads, /*grain_size=*/1, [&](int64_t begin, int64_t end) {
    detail::amx::HeadScratch scratch(shape);
    detail::amx::TileScope tiles;
    for (int64_t i = begin; i < end; ++i)
      work(i, scratch);
  });
}

// The merged output (B, Nq, H*Dh); the probabilities (B, H, Nq, N) where
// `probs` is defined.
torch::Tensor forward_kernel(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                             double scale, torch::Tensor* probs) {
  const int64_t B = q.size(0), H = q.size(1), Nq = q.size(2), D = q.size(3);
  auto out = torch::empty({B, Nq, H * D}, q.options());
  if (probs != nullptr) *probs = torch::empty({B, H, Nq, k.size(2)}, q.options());
  c10::BFloat16* out_data = out.data_ptr<c10::BFloat16>();
  for_each_head(B * H, shape_of(q, k, scale), [&](int64_t i, detail::amx::HeadScratch& s) {
    const int64_t b = i / H, h = i % H;
    detail::amx::head_forward(head_of(q, i), head_of(k, i), head_of(v, i),
                              probs != nullptr ? head_of(*probs, i) : nullptr,
                              out_data + b * Nq * H * D + h * D, H * D, s);
  });
  return out;
}

class AttentionHeads : public torch::autograd::Function<AttentionHeads> {
 public:
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& q,
                               const torch::Tensor& k, const torch::Tensor& v, double scale) {
    torch::Tensor probs;
    auto out = forward_kernel(q, k, v, scale, &probs);
    ctx->save_for_backward({q, k, v, probs});
    ctx->saved_data["scale"] = scale;
    return out;
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    RECORD_FUNCTION("vit::attention_heads_merged_backward", std::vector<c10::IValue>({grads[0]}));
    const auto saved = ctx->get_saved_variables();
    const auto &q = saved[0], &k = saved[1], &v = saved[2], &probs = saved[3];
    const auto dout = grads[0].to(torch::kBFloat16).contiguous();
    const int64_t H = q.size(1), Nq = q.size(2), D = q.size(3);
    auto dq = torch::empty_like(q), dk = torch::empty_like(k), dv = torch::empty_like(v);
    const c10::BFloat16* dout_data = dout.data_ptr<c10::BFloat16>();
    const auto shape = shape_of(q, k, ctx->saved_data["scale"].toDouble());
    for_each_head(q.size(0) * H, shape, [&](int64_t i, detail::amx::HeadScratch& s) {
      const int64_t b = i / H, h = i % H;
      detail::amx::head_backward(dout_data + b * Nq * H * D + h * D, H * D, head_of(q, i),
                                 head_of(k, i), head_of(v, i), head_of(probs, i), head_of(dq, i),
                                 head_of(dk, i), head_of(dv, i), s);
    });
    return {dq, dk, dv, {}};
  }
};

// LibTorch's operators, the softmax in fp32 as the kernel computes it.
torch::Tensor composed(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                       double scale) {
  const auto probs =
      torch::softmax(torch::matmul(q, k.transpose(-2, -1)) * scale, /*dim=*/-1, torch::kFloat);
  const auto out = torch::matmul(probs.to(v.scalar_type()), v);  // (B, H, Nq, Dh)
  return out.transpose(1, 2).reshape({q.size(0), q.size(2), q.size(1) * q.size(3)});
}

}  // namespace

bool attention_uses_own_kernel(const torch::Tensor& q, const torch::Tensor& k,
                               const torch::Tensor& v) {
  const auto is_bf16_heads = [](const torch::Tensor& t) {
    return detail::is_contiguous_on_cpu(t) && t.scalar_type() == torch::kBFloat16 && t.dim() == 4;
  };
  if (!is_bf16_heads(q) || !is_bf16_heads(k) || !is_bf16_heads(v)) return false;
  const int64_t D = q.size(3);
  return D % detail::amx::kTileDepth == 0 && D <= kMaxHeadDim && k.sizes() == v.sizes() &&
         q.size(0) == k.size(0) && q.size(1) == k.size(1) && k.size(3) == D && k.size(2) > 0 &&
         detail::amx::tiles_usable();
}

torch::Tensor attention_heads_merged(const torch::Tensor& q, const torch::Tensor& k,
                                     const torch::Tensor& v, double scale) {
  RECORD_FUNCTION("vit::attention_heads_merged", std::vector<c10::IValue>({q, k, v}));
  if (!attention_uses_own_kernel(q, k, v)) return composed(q, k, v, scale);
  const bool needs_graph = torch::GradMode::is_enabled() &&
                           (q.requires_grad() || k.requires_grad() || v.requires_grad());
  return needs_graph ? AttentionHeads::apply(q, k, v, scale)
                     : forward_kernel(q, k, v, scale, nullptr);
}

}  // namespace vit
