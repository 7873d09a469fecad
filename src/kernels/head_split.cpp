// The plain view-permute-unbind gives strided (B, H, N, Dh) views. The matrix
// products then copy each to a contiguous tensor anyway (the same one pass as here),
// but autograd's way back costs two passes: UnbindBackward stacks the three
// gradients into a (P, B, H, N, Dh) tensor, and the permute's and reshape's backward
// copies that into the projection's layout. Here the backward is one pass, and the
// contiguous heads fold into the (B*H, N, Dh) batches of kernels/batched_matmul
// without a copy. Other devices get the strided views (not measured there).
//
// On CPUs with AVX2 or AVX-512 our kernel (kernels/simd/head_split.inc) does the
// copies, and can add the projection's bias on the way: the product then runs
// without it (mm, not addmm, which first copies the bias into every row of its
// output), and the backward sums the bias's gradient in the pass that writes x's,
// instead of a separate sum over the rows. Its copies are also faster than ATen's.
#include "vit/kernels/head_split.hpp"

#include <ATen/Parallel.h>
#include <ATen/record_function.h>
#include <torch/autograd.h>
#include <torch/torch.h>

#include "kernel_operands.hpp"
#include "row_block_sums.hpp"
#include "simd/kernels.hpp"

#include <stdexcept>
#include <string>

namespace vit {
namespace {

// Rows per parallel task in the forward: enough work to outweigh handing it
// to a thread.
constexpr int64_t kHeadGrainRows = 64;

struct HeadShape {
  int64_t parts, heads, head_dim;
};

// x as (B, N, P, H, Dh).
torch::Tensor parts_view(const torch::Tensor& x, const HeadShape& s) {
  return x.reshape({x.size(0), x.size(1), s.parts, s.heads, s.head_dim});
}

// Whether our kernel (kernels/simd/head_split.inc) takes x, and a bias for
// rows of `width` values.
bool input_fits(const torch::Tensor& x) {
  return detail::simd_level() != detail::SimdLevel::kNone && detail::is_contiguous_on_cpu(x) &&
         detail::is_float_or_bf16(x.scalar_type());
}
bool bias_fits(const torch::Tensor& bias, int64_t width) {
  return detail::is_contiguous_on_cpu(bias) && bias.scalar_type() == torch::kFloat &&
         bias.dim() == 1 && bias.size(0) == width;
}

// Whether our kernel splits x, with `bias` (undefined: none) added.
bool own_kernel_runs(const torch::Tensor& x, const torch::Tensor& bias) {
  return input_fits(x) && (!bias.defined() || bias_fits(bias, x.size(2)));
}

// Off the CPU: views of x, (B, H, N, Dh) each, cut from its last dimension.
// SDPA's backward (cuDNN's) writes each gradient in its input's layout, so
// the three gradients are (B, N, H, Dh) in memory, and x's gradient is their
// concatenation along the last dimension: one copy. Views taken through a
// (B, N, P, H, Dh) reshape cost two, the stack of the three gradients and
// the copy back into x's layout (docs/benchmarks.md, "Why the own kernels").
std::vector<torch::Tensor> head_views(const torch::Tensor& x, const HeadShape& s) {
  std::vector<torch::Tensor> out;
  out.reserve(s.parts);
  for (const auto& part : x.chunk(s.parts, /*dim=*/-1))  // (B, N, H Dh) each
    out.push_back(part.view({x.size(0), x.size(1), s.heads, s.head_dim}).transpose(1, 2));
  return out;
}

// LibTorch's copies, for what our kernel does not take.
std::vector<torch::Tensor> copied_heads(const torch::Tensor& x, const HeadShape& s) {
  const auto packed = parts_view(x, s);
  std::vector<torch::Tensor> out;
  out.reserve(s.parts);
  for (int64_t p = 0; p < s.parts; ++p) {
    auto head_major = packed.select(/*dim=*/2, p).transpose(1, 2);  // (B, H, N, Dh), strided
    out.push_back(torch::empty(head_major.sizes(), x.options()).copy_(head_major));
  }
  return out;
}

template <typename T>
std::vector<torch::Tensor> kernel_heads_as(const torch::Tensor& x, const torch::Tensor& bias,
                                           const HeadShape& s) {
  const int64_t tokens = x.size(1), rows = x.size(0) * tokens;
  std::vector<torch::Tensor> out;
  std::vector<T*> outs;
  for (int64_t p = 0; p < s.parts; ++p) {
    out.push_back(torch::empty({x.size(0), s.heads, tokens, s.head_dim}, x.options()));
    outs.push_back(out.back().data_ptr<T>());
  }
  const T* in = x.data_ptr<T>();
  const float* b = bias.defined() ? bias.data_ptr<float>() : nullptr;
  at::parallel_for(0, rows, kHeadGrainRows, [&](int64_t begin, int64_t end) {
    VIT_SIMD_DISPATCH(
        heads_forward(in, b, outs.data(), begin, end, tokens, s.heads, s.head_dim, s.parts));
  });
  return out;
}

std::vector<torch::Tensor> kernel_heads(const torch::Tensor& x, const torch::Tensor& bias,
                                        const HeadShape& s) {
  return x.scalar_type() == torch::kBFloat16 ? kernel_heads_as<c10::BFloat16>(x, bias, s)
                                             : kernel_heads_as<float>(x, bias, s);
}

// The gradient of x, and of the bias where `with_bias`: the sum of x's over
// its rows (detail::summed_over_row_blocks).
struct InputAndBiasGrads {
  torch::Tensor dx, dbias;
};

template <typename T>
InputAndBiasGrads kernel_backward_as(const torch::autograd::variable_list& grads, torch::Tensor dx,
                                     bool with_bias, const HeadShape& s) {
  const int64_t tokens = dx.size(1), rows = dx.size(0) * tokens, width = dx.size(2);
  std::vector<torch::Tensor> held;  // keeps the contiguous gradients alive
  std::vector<const T*> in;
  for (int64_t p = 0; p < s.parts; ++p) {
    if (!grads[p].defined()) {
      in.push_back(nullptr);
      continue;
    }
    held.push_back(grads[p].to(dx.scalar_type()).contiguous());
    in.push_back(held.back().data_ptr<T>());
  }
  T* out = dx.data_ptr<T>();
  const auto run = [&](int64_t begin, int64_t end, float* dbias) {
    VIT_SIMD_DISPATCH(
        heads_backward(in.data(), out, dbias, begin, end, tokens, s.heads, s.head_dim, s.parts));
  };
  InputAndBiasGrads g{dx, {}};
  if (with_bias)
    g.dbias = detail::summed_over_row_blocks(rows, width, run);
  else
    at::parallel_for(0, rows, kHeadGrainRows,
                     [&](int64_t begin, int64_t end) { run(begin, end, nullptr); });
  return g;
}

// Applied to (x, bias, ...) where our kernel runs with a bias, else to (x,
// ...): LibTorch 1.13's Function::apply takes no undefined tensor among its
// inputs.
class SplitHeads : public torch::autograd::Function<SplitHeads> {
 public:
  static torch::autograd::variable_list forward(torch::autograd::AutogradContext* ctx,
                                                const torch::Tensor& x, int64_t parts,
                                                int64_t heads, int64_t head_dim) {
    return forward(ctx, x, torch::Tensor(), parts, heads, head_dim);
  }

  static torch::autograd::variable_list forward(torch::autograd::AutogradContext* ctx,
                                                const torch::Tensor& x, const torch::Tensor& bias,
                                                int64_t parts, int64_t heads, int64_t head_dim) {
    const HeadShape s{parts, heads, head_dim};
    const bool own = own_kernel_runs(x, bias);
    ctx->saved_data["own"] = own;
    ctx->saved_data["has_bias"] = bias.defined();
    ctx->saved_data["parts"] = parts;
    ctx->saved_data["heads"] = heads;
    ctx->saved_data["head_dim"] = head_dim;
    ctx->saved_data["sizes"] = x.sizes().vec();
    ctx->saved_data["dtype"] = x.scalar_type();  // the gradient's
    ctx->saved_data["device"] = x.device();
    return own ? kernel_heads(x, bias, s) : copied_heads(x, s);
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    RECORD_FUNCTION("vit::split_heads_backward", std::vector<c10::IValue>());
    const HeadShape s{ctx->saved_data["parts"].toInt(), ctx->saved_data["heads"].toInt(),
                      ctx->saved_data["head_dim"].toInt()};
    auto dx = torch::empty(ctx->saved_data["sizes"].toIntVector(),
                           torch::TensorOptions()
                               .dtype(ctx->saved_data["dtype"].toScalarType())
                               .device(ctx->saved_data["device"].toDevice()));
    if (ctx->saved_data["own"].toBool()) {
      // Input 1 is the bias only where there is one (see apply above).
      const bool with_bias = ctx->saved_data["has_bias"].toBool() && ctx->needs_input_grad(1);
      auto g = dx.scalar_type() == torch::kBFloat16
                   ? kernel_backward_as<c10::BFloat16>(grads, dx, with_bias, s)
                   : kernel_backward_as<float>(grads, dx, with_bias, s);
      return {g.dx, g.dbias, {}, {}, {}};  // without a bias, apply() drops the undefined last
    }
    const auto packed = parts_view(dx, s);
    for (int64_t p = 0; p < s.parts; ++p) {
      auto slot = packed.select(/*dim=*/2, p);  // (B, N, H, Dh)
      if (grads[p].defined())
        slot.copy_(grads[p].transpose(1, 2));
      else
        slot.zero_();
    }
    return {dx, {}, {}, {}, {}};
  }
};

void check_width(const torch::Tensor& x, int64_t parts, int64_t heads, int64_t head_dim) {
  if (x.dim() != 3 || x.size(2) != parts * heads * head_dim)
    throw std::invalid_argument("split_heads: expected (B, N, " +
                                std::to_string(parts * heads * head_dim) + "), got " +
                                c10::str(x.sizes()));
}

// x's heads, `bias` (undefined: none) added where own_kernel_runs(x, bias).
std::vector<torch::Tensor> split(const torch::Tensor& x, const torch::Tensor& bias, int64_t parts,
                                 int64_t heads, int64_t head_dim) {
  const HeadShape s{parts, heads, head_dim};
  if (!x.device().is_cpu()) return head_views(x, s);
  const bool needs_graph = torch::GradMode::is_enabled() &&
                           (x.requires_grad() || (bias.defined() && bias.requires_grad()));
  if (needs_graph)
    return bias.defined() ? SplitHeads::apply(x, bias, parts, heads, head_dim)
                          : SplitHeads::apply(x, parts, heads, head_dim);
  return own_kernel_runs(x, bias) ? kernel_heads(x, bias, s) : copied_heads(x, s);
}

}  // namespace

std::vector<torch::Tensor> split_heads(const torch::Tensor& x, int64_t parts, int64_t heads,
                                       int64_t head_dim) {
  check_width(x, parts, heads, head_dim);
  RECORD_FUNCTION("vit::split_heads", std::vector<c10::IValue>({x}));
  return split(x, {}, parts, heads, head_dim);
}

bool split_heads_with_bias_uses_own_kernel(const torch::Tensor& bias, const torch::Tensor& x) {
  if (!x.defined())  // any contiguous fp32 or bf16 product of the bias's width
    return detail::simd_level() != detail::SimdLevel::kNone && bias_fits(bias, bias.numel());
  return x.dim() == 3 && input_fits(x) && bias_fits(bias, x.size(2));
}

std::vector<torch::Tensor> split_heads_with_bias(const torch::Tensor& x, const torch::Tensor& bias,
                                                 int64_t parts, int64_t heads, int64_t head_dim) {
  check_width(x, parts, heads, head_dim);
  if (!bias.defined()) throw std::invalid_argument("split_heads_with_bias: no bias");
  RECORD_FUNCTION("vit::split_heads", std::vector<c10::IValue>({x}));
  if (!split_heads_with_bias_uses_own_kernel(bias, x))
    return split(x + bias.to(x.scalar_type()), {}, parts, heads, head_dim);
  return split(x, bias, parts, heads, head_dim);
}

}  // namespace vit
