// Our kernel (kernels/simd/gelu.inc, compiled for AVX2 and AVX-512) because
// torch::gelu is slower, its fp32 backward above all (measured: docs/benchmarks.md,
// "Why the own kernels").
//
// gelu_with_bias adds the bias, takes the GELU and, backward, sums the bias's
// gradient in the passes that already read h, instead of LibTorch's addmm copying
// the bias into every row first and a sum over the rows after. For the backward the
// forward keeps the slope gelu'(h + bias) in h's dtype instead of h, so the backward
// multiplies instead of computing the erf again; in bf16 the gradient is then
// rounded twice (the slope, the product).
#include "vit/kernels/gelu.hpp"

#include <utility>

#include <ATen/Parallel.h>
#include <ATen/record_function.h>
#include <torch/autograd.h>
#include <torch/torch.h>

#include "kernel_operands.hpp"
#include "row_block_sums.hpp"
#include "simd/kernels.hpp"

namespace vit {
namespace {

// Elements per parallel task: large enough that a task outweighs the cost
// of handing it to a thread, small enough to split an MLP's activations.
constexpr int64_t kGrain = 16384;

template <typename T>
torch::Tensor forward_as(const torch::Tensor& x) {
  auto y = torch::empty_like(x, at::MemoryFormat::Contiguous);
  const T* in = x.data_ptr<T>();
  T* out = y.data_ptr<T>();
  at::parallel_for(0, x.numel(), kGrain, [&](int64_t begin, int64_t end) {
    VIT_SIMD_DISPATCH(gelu_forward(in + begin, out + begin, end - begin));
  });
  return y;
}

template <typename T>
torch::Tensor backward_as(const torch::Tensor& dy, const torch::Tensor& x) {
  auto dx = torch::empty_like(x, at::MemoryFormat::Contiguous);
  const T* grad = dy.data_ptr<T>();
  const T* in = x.data_ptr<T>();
  T* out = dx.data_ptr<T>();
  at::parallel_for(0, x.numel(), kGrain, [&](int64_t begin, int64_t end) {
    VIT_SIMD_DISPATCH(gelu_backward(grad + begin, in + begin, out + begin, end - begin));
  });
  return dx;
}

torch::Tensor forward_kernel(const torch::Tensor& x) {
  return x.scalar_type() == torch::kFloat ? forward_as<float>(x) : forward_as<c10::BFloat16>(x);
}

torch::Tensor backward_kernel(const torch::Tensor& dy, const torch::Tensor& x) {
  return x.scalar_type() == torch::kFloat ? backward_as<float>(dy, x)
                                          : backward_as<c10::BFloat16>(dy, x);
}

class OwnGelu : public torch::autograd::Function<OwnGelu> {
 public:
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& x) {
    ctx->save_for_backward({x});
    return forward_kernel(x);
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    RECORD_FUNCTION("vit::gelu_backward", std::vector<c10::IValue>({grads[0]}));
    const auto x = ctx->get_saved_variables()[0];
    const auto dy = grads[0].contiguous();
    if (dy.scalar_type() != x.scalar_type() || !gelu_uses_own_kernel(dy))
      return {at::gelu_backward(dy, x)};
    return {backward_kernel(dy, x)};
  }
};

// Rows of (h + bias) per parallel task in the forward.
constexpr int64_t kBiasedGeluGrainRows = 16;

// y = gelu(h + bias), and where `with_slope` its slope gelu'(h + bias) for
// the backward (undefined otherwise).
struct BiasedGelu {
  torch::Tensor y, slope;
};

template <typename T>
BiasedGelu biased_forward_as(const torch::Tensor& h, const torch::Tensor& bias, bool with_slope) {
  const int64_t d = h.size(-1), rows = h.numel() / d;
  BiasedGelu g{torch::empty_like(h, at::MemoryFormat::Contiguous), {}};
  if (with_slope) g.slope = torch::empty_like(g.y);
  const T* in = h.data_ptr<T>();
  const float* b = bias.data_ptr<float>();
  T *out = g.y.data_ptr<T>(), *slope = with_slope ? g.slope.data_ptr<T>() : nullptr;
  at::parallel_for(0, rows, kBiasedGeluGrainRows, [&](int64_t begin, int64_t end) {
    VIT_SIMD_DISPATCH(gelu_biased_forward(in + begin * d, b, out + begin * d,
                                          slope ? slope + begin * d : nullptr, end - begin, d));
  });
  return g;
}

BiasedGelu biased_forward_kernel(const torch::Tensor& h, const torch::Tensor& bias,
                                 bool with_slope) {
  return h.scalar_type() == torch::kFloat ? biased_forward_as<float>(h, bias, with_slope)
                                          : biased_forward_as<c10::BFloat16>(h, bias, with_slope);
}

// dh = dy slope, and the bias's gradient summed in the same pass
// (detail::summed_over_row_blocks).
template <typename T>
std::pair<torch::Tensor, torch::Tensor> biased_backward_as(const torch::Tensor& dy,
                                                           const torch::Tensor& slope) {
  const int64_t d = slope.size(-1), rows = slope.numel() / d;
  auto dh = torch::empty_like(slope, at::MemoryFormat::Contiguous);
  const T *grad = dy.data_ptr<T>(), *s = slope.data_ptr<T>();
  T* out = dh.data_ptr<T>();
  auto dbias =
      detail::summed_over_row_blocks(rows, d, [&](int64_t begin, int64_t end, float* share) {
        VIT_SIMD_DISPATCH(gelu_biased_backward(grad + begin * d, s + begin * d, out + begin * d,
                                               share, end - begin, d));
      });
  return {dh, dbias};
}

// Applied to (h, bias): saves the slope the forward wrote, not h.
class OwnBiasedGelu : public torch::autograd::Function<OwnBiasedGelu> {
 public:
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& h,
                               const torch::Tensor& bias) {
    BiasedGelu g = biased_forward_kernel(h, bias, /*with_slope=*/true);
    ctx->save_for_backward({g.slope});
    return g.y;
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    RECORD_FUNCTION("vit::gelu_biased_backward", std::vector<c10::IValue>({grads[0]}));
    const auto slope = ctx->get_saved_variables()[0];
    const auto dy = grads[0].to(slope.scalar_type()).contiguous();
    auto [dh, dbias] = slope.scalar_type() == torch::kFloat
                           ? biased_backward_as<float>(dy, slope)
                           : biased_backward_as<c10::BFloat16>(dy, slope);
    return {ctx->needs_input_grad(0) ? dh : torch::Tensor(),
            ctx->needs_input_grad(1) ? dbias : torch::Tensor()};
  }
};

}  // namespace

bool gelu_with_bias_uses_own_kernel(const torch::Tensor& bias, const torch::Tensor& h) {
  const bool bias_fits = bias.defined() && detail::is_contiguous_on_cpu(bias) &&
                         bias.scalar_type() == torch::kFloat && bias.dim() == 1 && bias.size(0) > 0;
  if (!h.defined()) return bias_fits && detail::simd_level() != detail::SimdLevel::kNone;
  return bias_fits && gelu_uses_own_kernel(h) && h.dim() >= 1 && h.size(-1) == bias.size(0);
}

torch::Tensor gelu_with_bias(const torch::Tensor& h, const torch::Tensor& bias) {
  RECORD_FUNCTION("vit::gelu_biased", std::vector<c10::IValue>({h}));  // for the step profiler
  if (!gelu_with_bias_uses_own_kernel(bias, h)) return torch::gelu(h + bias.to(h.scalar_type()));
  const bool needs_graph =
      torch::GradMode::is_enabled() && (h.requires_grad() || bias.requires_grad());
  if (needs_graph) return OwnBiasedGelu::apply(h, bias);
  return biased_forward_kernel(h, bias, /*with_slope=*/false).y;
}

bool gelu_uses_own_kernel(const torch::Tensor& x) {
  return detail::simd_level() != detail::SimdLevel::kNone && detail::is_contiguous_on_cpu(x) &&
         detail::is_float_or_bf16(x.scalar_type());
}

torch::Tensor gelu(const torch::Tensor& x) {
  RECORD_FUNCTION("vit::gelu", std::vector<c10::IValue>({x}));  // for the step profiler
  if (!gelu_uses_own_kernel(x)) return torch::gelu(x);
  if (torch::GradMode::is_enabled() && x.requires_grad()) return OwnGelu::apply(x);
  return forward_kernel(x);
}

}  // namespace vit
