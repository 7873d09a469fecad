// Our kernel (kernels/simd/layer_norm.inc, compiled for AVX2 and AVX-512), forward
// and backward. Writing bf16 directly serves a LayerNorm that feeds a bf16 matrix
// product: LibTorch would write fp32 and autocast would then cast it, and cast the
// gradient back, in two more passes (measured: docs/benchmarks.md, "Why the own
// kernels"). layer_norm_for_linear's bf16 is what autocast would cast to anyway.
#include "vit/kernels/layer_norm.hpp"

#include <ATen/Parallel.h>
#include <ATen/record_function.h>
#include <torch/autograd.h>
#include <torch/torch.h>

#include "kernel_operands.hpp"
#include "row_block_sums.hpp"
#include "simd/kernels.hpp"
#include "vit/autocast_state.hpp"
#include "vit/kernels/gpu_residual_norm.hpp"
#include "vit/kernels/product_reductions.hpp"

namespace vit {
namespace {

// Rows per parallel task in the forward: enough work to outweigh handing it
// to a thread.
constexpr int64_t kLayerNormGrainRows = 64;

struct Normalized {
  torch::Tensor y, mean, rstd;  // y like x; mean and rstd float, one per row
};

template <typename T>
Normalized forward_as(const torch::Tensor& x, const torch::Tensor& weight,
                      const torch::Tensor& bias, double eps) {
  const int64_t d = x.size(-1), rows = x.numel() / d;
  Normalized n;
  n.y = torch::empty(x.sizes(), x.options().dtype(c10::CppTypeToScalarType<T>::value));
  n.mean = torch::empty({rows}, x.options());
  n.rstd = torch::empty({rows}, x.options());
  const float *in = x.data_ptr<float>(), *gamma = weight.data_ptr<float>(),
              *beta = bias.data_ptr<float>();
  T* out = n.y.data_ptr<T>();
  float *mean = n.mean.data_ptr<float>(), *rstd = n.rstd.data_ptr<float>();
  at::parallel_for(0, rows, kLayerNormGrainRows, [&](int64_t begin, int64_t end) {
    VIT_SIMD_DISPATCH(layer_norm_forward(in + begin * d, gamma, beta, out + begin * d, mean + begin,
                                         rstd + begin, end - begin, d, static_cast<float>(eps)));
  });
  return n;
}

Normalized forward_kernel(const torch::Tensor& x, const torch::Tensor& weight,
                          const torch::Tensor& bias, double eps, bool to_bf16) {
  return to_bf16 ? forward_as<c10::BFloat16>(x, weight, bias, eps)
                 : forward_as<float>(x, weight, bias, eps);
}

// dx, dweight, dbias: dweight's and dbias's sums over each block of rows as
// one share of 2 d values (detail::summed_over_row_blocks).
template <typename T>
torch::autograd::variable_list backward_as(const torch::Tensor& dy, const torch::Tensor& x,
                                           const torch::Tensor& weight, const torch::Tensor& mean,
                                           const torch::Tensor& rstd) {
  const int64_t d = x.size(-1), rows = x.numel() / d;
  auto dx = torch::empty_like(x, at::MemoryFormat::Contiguous);
  const T* grad = dy.data_ptr<T>();
  const float *in = x.data_ptr<float>(), *gamma = weight.data_ptr<float>(),
              *mu = mean.data_ptr<float>(), *rs = rstd.data_ptr<float>();
  float* out = dx.data_ptr<float>();
  const auto sums =
      detail::summed_over_row_blocks(rows, 2 * d, [&](int64_t begin, int64_t end, float* share) {
        VIT_SIMD_DISPATCH(layer_norm_backward(grad + begin * d, in + begin * d, gamma, mu + begin,
                                              rs + begin, out + begin * d, share, share + d,
                                              end - begin, d));
      }).view({2, d});
  return {dx, sums[0], sums[1]};
}

class OwnLayerNorm : public torch::autograd::Function<OwnLayerNorm> {
 public:
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& x,
                               const torch::Tensor& weight, const torch::Tensor& bias, double eps,
                               bool to_bf16) {
    Normalized n = forward_kernel(x, weight, bias, eps, to_bf16);
    ctx->save_for_backward({x, weight, n.mean, n.rstd});
    return n.y;
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    RECORD_FUNCTION("vit::layer_norm_backward", std::vector<c10::IValue>({grads[0]}));
    const auto saved = ctx->get_saved_variables();
    const auto& x = saved[0];
    auto dy = grads[0].contiguous();
    if (dy.scalar_type() != torch::kBFloat16) dy = dy.to(torch::kFloat);
    auto g = dy.scalar_type() == torch::kBFloat16
                 ? backward_as<c10::BFloat16>(dy, x, saved[1], saved[2], saved[3])
                 : backward_as<float>(dy, x, saved[1], saved[2], saved[3]);
    g.push_back({});  // eps
    g.push_back({});  // to_bf16
    return g;
  }
};

}  // namespace

bool layer_norm_uses_own_kernel(const torch::Tensor& x, const torch::Tensor& weight,
                                const torch::Tensor& bias) {
  const bool supported = detail::simd_level() != detail::SimdLevel::kNone;
  const auto is_float_on_cpu = [](const torch::Tensor& t) {
    return detail::is_contiguous_on_cpu(t) && t.scalar_type() == torch::kFloat;
  };
  return supported && is_float_on_cpu(x) && is_float_on_cpu(weight) && is_float_on_cpu(bias) &&
         x.dim() >= 1 && x.size(-1) > 0 && weight.dim() == 1 && weight.size(0) == x.size(-1) &&
         bias.dim() == 1 && bias.size(0) == x.size(-1);
}

torch::Tensor layer_norm(const torch::Tensor& x, const torch::Tensor& weight,
                         const torch::Tensor& bias, double eps, bool to_bf16) {
  RECORD_FUNCTION("vit::layer_norm", std::vector<c10::IValue>({x}));  // for the step profiler
  if (gpu_residual_norm_applies(x, weight, bias))                     // on GPUs, 16-bit end to end
    return gpu_residual_then_norm(x, {}, weight, bias, eps).normalized;
  if (product_reductions_apply(x, weight, bias))  // the same, for widths its kernel does not take
    return layer_norm_with_product_gradients(x, weight, bias, eps);
  if (!layer_norm_uses_own_kernel(x, weight, bias)) {
    auto y = torch::layer_norm(x, {x.size(-1)}, weight, bias, eps);
    return to_bf16 ? y.to(torch::kBFloat16) : y;
  }
  const bool needs_graph = torch::GradMode::is_enabled() &&
                           (x.requires_grad() || weight.requires_grad() || bias.requires_grad());
  if (needs_graph) return OwnLayerNorm::apply(x, weight, bias, eps, to_bf16);
  return forward_kernel(x, weight, bias, eps, to_bf16).y;
}

torch::Tensor layer_norm_for_linear(const torch::Tensor& x, const torch::Tensor& weight,
                                    const torch::Tensor& bias, double eps) {
  return layer_norm(x, weight, bias, eps, normalizes_to_bf16_for_linear(x));
}

bool normalizes_to_bf16_for_linear(const torch::Tensor& x) {
  return x.device().is_cpu() && cpu_autocast_is_bf16();
}

}  // namespace vit
