// Apart, the norm reads z back from memory after the residual wrote it, and backward
// autograd adds the norm's gradient of z to the one the residual stream holds (a
// pass over three fp32 tensors) before the residual's backward reads the sum again.
// Our kernel (kernels/simd/residual_norm.inc) does each direction in one pass over
// each row, with the same arithmetic as the two kernels.
#include "vit/kernels/residual_norm.hpp"

#include <ATen/Parallel.h>
#include <ATen/record_function.h>
#include <torch/autograd.h>
#include <torch/torch.h>

#include "row_block_sums.hpp"
#include "simd/kernels.hpp"
#include "vit/kernels/layer_norm.hpp"
#include "vit/kernels/residual_add.hpp"

namespace vit {
namespace {

// Rows per parallel task in the forward: enough work to outweigh handing it
// to a thread.
constexpr int64_t kGrainRows = 64;

struct Forward {
  torch::Tensor z, n, mean, rstd;  // mean and rstd: one per row
};

template <typename T>
Forward forward_as(const torch::Tensor& x, const torch::Tensor& y, const torch::Tensor& bias,
                   const torch::Tensor& weight, const torch::Tensor& norm_bias, double eps) {
  const int64_t d = x.size(-1), rows = x.numel() / d;
  Forward f{torch::empty_like(x, at::MemoryFormat::Contiguous), torch::empty_like(y), {}, {}};
  f.mean = torch::empty({rows}, x.options());
  f.rstd = torch::empty({rows}, x.options());
  const float *in = x.data_ptr<float>(), *b = bias.data_ptr<float>(),
              *gamma = weight.data_ptr<float>(), *beta = norm_bias.data_ptr<float>();
  const T* product = y.data_ptr<T>();
  float *z = f.z.data_ptr<float>(), *mean = f.mean.data_ptr<float>(),
        *rstd = f.rstd.data_ptr<float>();
  T* n = f.n.data_ptr<T>();
  at::parallel_for(0, rows, kGrainRows, [&](int64_t begin, int64_t end) {
    const int64_t at = begin * d;
    VIT_SIMD_DISPATCH(residual_norm_forward(in + at, product + at, b, gamma, beta, z + at, n + at,
                                            mean + begin, rstd + begin, end - begin, d,
                                            static_cast<float>(eps)));
  });
  return f;
}

Forward forward_kernel(const torch::Tensor& x, const torch::Tensor& y, const torch::Tensor& bias,
                       const torch::Tensor& weight, const torch::Tensor& norm_bias, double eps) {
  return y.scalar_type() == torch::kBFloat16
             ? forward_as<c10::BFloat16>(x, y, bias, weight, norm_bias, eps)
             : forward_as<float>(x, y, bias, weight, norm_bias, eps);
}

// The gradients of x, y, bias, weight and norm_bias from those of z and n
// (either undefined). The three parameter gradients are summed over blocks
// of rows as one share of 3 d values (detail::summed_over_row_blocks).
template <typename N>
torch::autograd::variable_list backward_as(const torch::Tensor& dz_in, const torch::Tensor& dn_in,
                                           const torch::Tensor& z, const torch::Tensor& weight,
                                           const torch::Tensor& mean, const torch::Tensor& rstd,
                                           bool y_bf16) {
  const int64_t d = z.size(-1), rows = z.numel() / d;
  const auto dz = dz_in.defined() ? dz_in.to(torch::kFloat).contiguous() : dz_in;
  const auto dn =
      dn_in.defined() ? dn_in.to(c10::CppTypeToScalarType<N>::value).contiguous() : dn_in;
  auto dx = torch::empty_like(z, at::MemoryFormat::Contiguous);
  auto dy = y_bf16 ? torch::empty(z.sizes(), z.options().dtype(torch::kBFloat16)) : dx;
  const float* grad_z = dz.defined() ? dz.data_ptr<float>() : nullptr;
  const N* grad_n = dn.defined() ? dn.template data_ptr<N>() : nullptr;
  const float *sum = z.data_ptr<float>(), *gamma = weight.data_ptr<float>(),
              *mu = mean.data_ptr<float>(), *rs = rstd.data_ptr<float>();
  float* out = dx.data_ptr<float>();
  c10::BFloat16* narrowed = y_bf16 ? dy.data_ptr<c10::BFloat16>() : nullptr;
  const auto sums =  // the bias's, the weight's and the norm bias's: (3, d)
      detail::summed_over_row_blocks(rows, 3 * d, [&](int64_t begin, int64_t end, float* share) {
        const int64_t at = begin * d;
        VIT_SIMD_DISPATCH(residual_norm_backward(
            grad_z ? grad_z + at : nullptr, grad_n ? grad_n + at : nullptr, sum + at, gamma,
            mu + begin, rs + begin, out + at, narrowed ? narrowed + at : nullptr, share, share + d,
            share + 2 * d, end - begin, d));
      }).view({3, d});
  return {dx, dy, sums[0], sums[1], sums[2]};
}

class ResidualNorm : public torch::autograd::Function<ResidualNorm> {
 public:
  static torch::autograd::variable_list forward(torch::autograd::AutogradContext* ctx,
                                                const torch::Tensor& x, const torch::Tensor& y,
                                                const torch::Tensor& bias,
                                                const torch::Tensor& weight,
                                                const torch::Tensor& norm_bias, double eps) {
    Forward f = forward_kernel(x, y, bias, weight, norm_bias, eps);
    ctx->save_for_backward({f.z, weight, f.mean, f.rstd});
    ctx->saved_data["bf16"] = y.scalar_type() == torch::kBFloat16;
    return {f.z, f.n};
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    RECORD_FUNCTION("vit::residual_norm_backward", std::vector<c10::IValue>());
    const auto saved = ctx->get_saved_variables();
    const bool bf16 = ctx->saved_data["bf16"].toBool();
    auto g = bf16 ? backward_as<c10::BFloat16>(grads[0], grads[1], saved[0], saved[1], saved[2],
                                               saved[3], /*y_bf16=*/true)
                  : backward_as<float>(grads[0], grads[1], saved[0], saved[1], saved[2], saved[3],
                                       /*y_bf16=*/false);
    g.push_back({});  // eps
    return g;
  }
};

}  // namespace

bool biased_residual_then_norm_uses_own_kernel(const torch::Tensor& x, const torch::Tensor& bias,
                                               const torch::Tensor& weight,
                                               const torch::Tensor& norm_bias, bool to_bf16,
                                               const torch::Tensor& y) {
  const bool y_matches = !y.defined() || (y.scalar_type() == torch::kBFloat16) == to_bf16;
  return y_matches && biased_residual_uses_own_kernel(x, bias, y) &&
         layer_norm_uses_own_kernel(x, weight, norm_bias);
}

ResidualAndNorm add_biased_residual_then_norm(const torch::Tensor& x, const torch::Tensor& y,
                                              const torch::Tensor& bias,
                                              const torch::Tensor& weight,
                                              const torch::Tensor& norm_bias, double eps,
                                              bool to_bf16) {
  if (!y.defined() ||
      !biased_residual_then_norm_uses_own_kernel(x, bias, weight, norm_bias, to_bf16, y)) {
    auto sum = add_biased_residual(x, y, bias);
    return {sum, layer_norm(sum, weight, norm_bias, eps, to_bf16)};
  }
  RECORD_FUNCTION("vit::residual_norm", std::vector<c10::IValue>({x, y}));  // for the profiler
  const bool needs_graph = torch::GradMode::is_enabled() &&
                           (x.requires_grad() || y.requires_grad() || bias.requires_grad() ||
                            weight.requires_grad() || norm_bias.requires_grad());
  if (needs_graph) {
    const auto out = ResidualNorm::apply(x, y, bias, weight, norm_bias, eps);
    return {out[0], out[1]};
  }
  Forward f = forward_kernel(x, y, bias, weight, norm_bias, eps);
  return {f.z, f.n};
}

}  // namespace vit
