// One kernel each way:
// - forward, one pass over x and y that writes z, n and each row's mean and rstd;
// - backward, one pass over dn, dz and z that writes dx (the stream's dz plus the
//   norm's x gradient, which is also y's) and sums the norm's weight and bias
//   gradients on the way.
// Apart, LibTorch's ops ran the add, a LayerNorm forward well below the GPU's memory
// speed on rows of 384, the norm's x gradient, a second pass over dy and x for the
// parameter gradients (kernels/product_reductions), and autograd's add of z's two
// gradients: five passes over memory where two suffice (measured:
// docs/benchmarks.md, "Where the step goes").
#include "vit/kernels/gpu_residual_norm.hpp"

#include <ATen/record_function.h>
#include <torch/autograd.h>
#include <torch/torch.h>

#include "cuda_operands.hpp"
#include "vit/build_features.hpp"
#include "vit/kernels/layer_norm.hpp"
#include "vit/kernels/product_reductions.hpp"

#if VIT_WITH_CUDA
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>

#include "cuda/residual_layer_norm.hpp"
#endif

namespace vit {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// A tensor as the kernels read it: contiguous and 16-byte aligned (one that
// is not, a copy); undefined stays undefined.
torch::Tensor as_vectors(const torch::Tensor& t) {
  if (!t.defined() || (t.is_contiguous() && detail::is_16_byte_aligned(t))) return t;
  return t.clone(at::MemoryFormat::Contiguous);
}

struct ResidualNormed {
  torch::Tensor z, n, mean, rstd;  // z: x + y, or x itself without y; mean, rstd: (rows) fp32
};

struct ResidualNormGradients {
  torch::Tensor dx, dweight, dbias;  // dweight and dbias undefined without dn
};

// The kernels' arithmetic in LibTorch's ops, for tensors not on a GPU: what
// the tests check the autograd functions below with on the CPU.
ResidualNormed forward_by_libtorch(const torch::Tensor& x, const torch::Tensor& y,
                                   const torch::Tensor& weight, const torch::Tensor& bias,
                                   double eps) {
  ResidualNormed f;
  f.z = y.defined() ? x + y : x;
  const auto z = f.z.to(torch::kFloat).reshape({-1, x.size(-1)});
  f.mean = z.mean(-1);
  f.rstd = torch::rsqrt(z.var(-1, /*unbiased=*/false) + eps);
  const auto x_hat = (z - f.mean.unsqueeze(1)) * f.rstd.unsqueeze(1);
  f.n = (x_hat * weight.to(torch::kFloat) + bias.to(torch::kFloat))
            .to(x.scalar_type())
            .view(x.sizes());
  return f;
}

ResidualNormGradients backward_by_libtorch(const torch::Tensor& dz, const torch::Tensor& dn,
                                           const torch::Tensor& z, const torch::Tensor& weight,
                                           const torch::Tensor& mean, const torch::Tensor& rstd) {
  const int64_t d = z.size(-1);
  const auto rows = [&](const torch::Tensor& t) { return t.to(torch::kFloat).reshape({-1, d}); };
  const auto x_hat = (rows(z) - mean.unsqueeze(1)) * rstd.unsqueeze(1);
  const auto g = rows(dn) * weight.to(torch::kFloat);
  auto dx = rstd.unsqueeze(1) *
            (g - g.mean(-1, /*keepdim=*/true) - x_hat * (g * x_hat).mean(-1, /*keepdim=*/true));
  if (dz.defined()) dx = dx + rows(dz);
  return {dx.to(z.scalar_type()).view(z.sizes()), (rows(dn) * x_hat).sum(0), rows(dn).sum(0)};
}

#if VIT_WITH_CUDA
bool like(const torch::Tensor& y, const torch::Tensor& x) {
  return y.scalar_type() == x.scalar_type() && y.device() == x.device() && y.sizes() == x.sizes() &&
         y.is_contiguous() && detail::is_16_byte_aligned(y);
}

ResidualNormed forward_by_kernel(const torch::Tensor& x, const torch::Tensor& y,
                                 const torch::Tensor& weight, const torch::Tensor& bias,
                                 double eps) {
  const int64_t d = x.size(-1), rows = x.numel() / d;
  ResidualNormed f;
  f.z = y.defined() ? torch::empty_like(x, at::MemoryFormat::Contiguous) : x;
  f.n = torch::empty_like(x, at::MemoryFormat::Contiguous);
  f.mean = torch::empty({rows}, x.options().dtype(torch::kFloat));
  f.rstd = torch::empty_like(f.mean);
  cuda::launch_residual_layer_norm_forward(
      detail::half_type_of(x), x.data_ptr(), y.defined() ? y.data_ptr() : nullptr,
      weight.data_ptr(), bias.data_ptr(), y.defined() ? f.z.data_ptr() : nullptr, f.n.data_ptr(),
      f.mean.data_ptr<float>(), f.rstd.data_ptr<float>(), rows, d, static_cast<float>(eps),
      at::cuda::getCurrentCUDAStream().stream());
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return f;
}

ResidualNormGradients backward_by_kernel(const torch::Tensor& dz, const torch::Tensor& dn,
                                         const torch::Tensor& z, const torch::Tensor& weight,
                                         const torch::Tensor& mean, const torch::Tensor& rstd) {
  const int64_t d = z.size(-1), rows = z.numel() / d;
  const int sms = at::cuda::getCurrentDeviceProperties()->multiProcessorCount;
  const int64_t blocks = cuda::residual_layer_norm_backward_blocks(rows, sms);
  auto partials = torch::empty({blocks, 2, d}, mean.options());
  auto dx = torch::empty_like(z, at::MemoryFormat::Contiguous);
  cuda::launch_residual_layer_norm_backward(
      detail::half_type_of(z), dn.data_ptr(), dz.defined() ? dz.data_ptr() : nullptr, z.data_ptr(),
      weight.data_ptr(), mean.data_ptr<float>(), rstd.data_ptr<float>(), dx.data_ptr(),
      partials.data_ptr<float>(), rows, d, blocks, at::cuda::getCurrentCUDAStream().stream());
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  const auto sums = partials.sum(0);  // (2, d) fp32
  return {dx, sums[0], sums[1]};
}
#endif

ResidualNormed forward_pass(const torch::Tensor& x, const torch::Tensor& y,
                            const torch::Tensor& weight, const torch::Tensor& bias, double eps) {
#if VIT_WITH_CUDA
  if (x.is_cuda()) return forward_by_kernel(x, y, weight.contiguous(), bias.contiguous(), eps);
#endif
  return forward_by_libtorch(x, y, weight, bias, eps);
}

// dn undefined (n feeds nothing): dx is dz, and the parameters get nothing.
ResidualNormGradients backward_pass(const torch::Tensor& dz_in, const torch::Tensor& dn_in,
                                    const torch::Tensor& z, const torch::Tensor& weight,
                                    const torch::Tensor& mean, const torch::Tensor& rstd) {
  const auto dz = as_vectors(dz_in), dn = as_vectors(dn_in);
  if (!dn.defined()) return {dz, {}, {}};
  ResidualNormGradients g;
#if VIT_WITH_CUDA
  if (z.is_cuda()) g = backward_by_kernel(dz, dn, z, weight.contiguous(), mean, rstd);
#endif
  if (!g.dx.defined()) g = backward_by_libtorch(dz, dn, z, weight, mean, rstd);
  g.dweight = g.dweight.to(weight.scalar_type());
  g.dbias = g.dbias.to(weight.scalar_type());
  return g;
}

// z = x + y and n = layer_norm(z): outputs {z, n}; x's and y's gradient is
// the same tensor.
struct ResidualNormFunction : torch::autograd::Function<ResidualNormFunction> {
  static variable_list forward(AutogradContext* ctx, const torch::Tensor& x, const torch::Tensor& y,
                               const torch::Tensor& weight, const torch::Tensor& bias, double eps) {
    auto f = forward_pass(x, y, weight, bias, eps);
    ctx->save_for_backward({f.z, weight, f.mean, f.rstd});
    return {f.z, f.n};
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    RECORD_FUNCTION("vit::gpu_residual_norm_backward", std::vector<c10::IValue>());
    const auto s = ctx->get_saved_variables();
    auto g = backward_pass(grads[0], grads[1], s[0], s[1], s[2], s[3]);
    return {g.dx, g.dx, g.dweight, g.dbias, torch::Tensor()};
  }
};

// n = layer_norm(x) alone. (Apart from the above: LibTorch's autograd
// functions take no undefined tensor as an input.)
struct NormFunction : torch::autograd::Function<NormFunction> {
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& x,
                               const torch::Tensor& weight, const torch::Tensor& bias, double eps) {
    auto f = forward_pass(x, {}, weight, bias, eps);
    ctx->save_for_backward({x, weight, f.mean, f.rstd});
    return f.n;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    RECORD_FUNCTION("vit::gpu_residual_norm_backward", std::vector<c10::IValue>());
    const auto s = ctx->get_saved_variables();
    auto g = backward_pass({}, grads[0], s[0], s[1], s[2], s[3]);
    return {g.dx, g.dweight, g.dbias, torch::Tensor()};
  }
};

}  // namespace

namespace detail {

ResidualAndNorm residual_then_norm_functions(const torch::Tensor& x, const torch::Tensor& y,
                                             const torch::Tensor& weight, const torch::Tensor& bias,
                                             double eps) {
  if (!y.defined()) return {x, NormFunction::apply(x, weight, bias, eps)};
  const auto out = ResidualNormFunction::apply(x, y, weight, bias, eps);
  return {out[0], out[1]};
}

}  // namespace detail

bool gpu_residual_norm_applies(const torch::Tensor& x, const torch::Tensor& weight,
                               const torch::Tensor& bias, const torch::Tensor& y) {
#if VIT_WITH_CUDA
  if (!product_reductions_apply(x, weight, bias)) return false;  // the CPU's calls leave here
  const int64_t d = x.size(-1);
  return cuda::residual_layer_norm_fits(d) && x.numel() > 0 && detail::is_16_byte_aligned(x) &&
         weight.dim() == 1 && weight.size(0) == d && bias.dim() == 1 && bias.size(0) == d &&
         (!y.defined() || like(y, x));
#else
  (void)x, (void)weight, (void)bias, (void)y;
  return false;
#endif
}

ResidualAndNorm gpu_residual_then_norm(const torch::Tensor& x, const torch::Tensor& y,
                                       const torch::Tensor& weight, const torch::Tensor& bias,
                                       double eps) {
  if (gpu_residual_norm_applies(x, weight, bias, y)) {
    RECORD_FUNCTION("vit::gpu_residual_norm", std::vector<c10::IValue>({x}));  // for the profiler
    return detail::residual_then_norm_functions(x, y, weight, bias, eps);
  }
  auto z = y.defined() ? x + y : x;
  auto n = layer_norm(z, weight, bias, eps);
  return {std::move(z), std::move(n)};
}

}  // namespace vit
