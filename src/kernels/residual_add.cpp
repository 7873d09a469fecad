// LibTorch's addmm starts by copying the bias into every row of its output, one
// pass; under bf16 autocast the residual add then widens the product to fp32, a
// second pass, before adding, a third; backward, autograd narrows the gradient to
// bf16 and sums it over the rows for the bias in two more. Our kernel
// (kernels/simd/residual.inc) does each direction in one pass.
#include "vit/kernels/residual_add.hpp"

#include <ATen/Parallel.h>
#include <ATen/record_function.h>
#include <torch/autograd.h>
#include <torch/torch.h>

#include "kernel_operands.hpp"
#include "row_block_sums.hpp"
#include "simd/kernels.hpp"

namespace vit {
namespace {

// Rows per parallel task in the forward: enough work to outweigh handing it
// to a thread.
constexpr int64_t kResidualGrainRows = 64;

torch::Tensor forward_kernel(const torch::Tensor& x, const torch::Tensor& y,
                             const torch::Tensor& bias) {
  const int64_t d = x.size(-1), rows = x.numel() / d;
  auto z = torch::empty_like(x, at::MemoryFormat::Contiguous);
  const float *in = x.data_ptr<float>(), *b = bias.data_ptr<float>();
  float* out = z.data_ptr<float>();
  at::parallel_for(0, rows, kResidualGrainRows, [&](int64_t begin, int64_t end) {
    if (y.scalar_type() == torch::kBFloat16)
      VIT_SIMD_DISPATCH(biased_residual_forward(in + begin * d,
                                                y.data_ptr<c10::BFloat16>() + begin * d, b,
                                                out + begin * d, end - begin, d));
    else
      VIT_SIMD_DISPATCH(biased_residual_forward(in + begin * d, y.data_ptr<float>() + begin * d, b,
                                                out + begin * d, end - begin, d));
  });
  return z;
}

// The bias's gradient, dz summed over its rows (detail::summed_over_row_blocks),
// and dz in bf16 for y where `y_bf16`, else y's gradient is dz itself.
struct BiasAndY {
  torch::Tensor dbias, dy;
};

BiasAndY backward_kernel(const torch::Tensor& dz, bool y_bf16) {
  const int64_t d = dz.size(-1), rows = dz.numel() / d;
  BiasAndY g{{}, y_bf16 ? torch::empty(dz.sizes(), dz.options().dtype(torch::kBFloat16)) : dz};
  const float* grad = dz.data_ptr<float>();
  c10::BFloat16* narrowed = y_bf16 ? g.dy.data_ptr<c10::BFloat16>() : nullptr;
  g.dbias = detail::summed_over_row_blocks(rows, d, [&](int64_t begin, int64_t end, float* share) {
    VIT_SIMD_DISPATCH(biased_residual_backward(
        grad + begin * d, narrowed ? narrowed + begin * d : nullptr, share, end - begin, d));
  });
  return g;
}

class BiasedResidual : public torch::autograd::Function<BiasedResidual> {
 public:
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& x,
                               const torch::Tensor& y, const torch::Tensor& bias) {
    ctx->saved_data["y_bf16"] = y.scalar_type() == torch::kBFloat16;
    return forward_kernel(x, y, bias);
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    RECORD_FUNCTION("vit::biased_residual_backward", std::vector<c10::IValue>({grads[0]}));
    const auto dz = grads[0].to(torch::kFloat).contiguous();
    const bool y_bf16 = ctx->saved_data["y_bf16"].toBool();
    torch::autograd::variable_list g = {ctx->needs_input_grad(0) ? dz : torch::Tensor(), {}, {}};
    if (ctx->needs_input_grad(2)) {
      auto [dbias, dy] = backward_kernel(dz, y_bf16);
      g[2] = dbias;
      if (ctx->needs_input_grad(1)) g[1] = dy;
    } else if (ctx->needs_input_grad(1)) {
      g[1] = y_bf16 ? dz.to(torch::kBFloat16) : dz;
    }
    return g;
  }
};

}  // namespace

bool biased_residual_uses_own_kernel(const torch::Tensor& x, const torch::Tensor& bias,
                                     const torch::Tensor& y) {
  const bool supported = detail::simd_level() != detail::SimdLevel::kNone;
  const bool y_fits = !y.defined() || (detail::is_contiguous_on_cpu(y) && y.sizes() == x.sizes() &&
                                       detail::is_float_or_bf16(y.scalar_type()));
  return supported && detail::is_contiguous_on_cpu(x) && detail::is_contiguous_on_cpu(bias) &&
         y_fits && x.scalar_type() == torch::kFloat && bias.scalar_type() == torch::kFloat &&
         x.dim() >= 1 && x.size(-1) > 0 && bias.dim() == 1 && bias.size(0) == x.size(-1);
}

torch::Tensor add_biased_residual(const torch::Tensor& x, const torch::Tensor& y,
                                  const torch::Tensor& bias) {
  RECORD_FUNCTION("vit::biased_residual", std::vector<c10::IValue>({x, y}));  // for the profiler
  if (!y.defined() || !biased_residual_uses_own_kernel(x, bias, y)) return x + (y + bias);
  const bool needs_graph = torch::GradMode::is_enabled() &&
                           (x.requires_grad() || y.requires_grad() || bias.requires_grad());
  if (needs_graph) return BiasedResidual::apply(x, y, bias);
  return forward_kernel(x, y, bias);
}

}  // namespace vit
