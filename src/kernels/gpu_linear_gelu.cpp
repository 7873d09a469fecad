#include "vit/kernels/gpu_linear_gelu.hpp"

#include <ATen/record_function.h>
#include <torch/autograd.h>
#include <torch/torch.h>

#include <cstdlib>
#include <cstring>

#include "cuda_operands.hpp"
#include "linear_gradients.hpp"
#include "vit/build_features.hpp"
#include "vit/kernels/product_reductions.hpp"

#if VIT_WITH_CUDA
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>

#include "cuda/gelu.hpp"
#endif

namespace vit {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

struct HiddenGradients {
  torch::Tensor dh;        // h's shape and dtype
  torch::Tensor bias_sum;  // (out) fp32: dh summed over the rows
};

// The kernels' arithmetic in LibTorch's ops, for tensors not on a GPU: fp32
// inside, rounded once.
torch::Tensor gelu_by_libtorch(const torch::Tensor& h) {
  return torch::gelu(h.to(torch::kFloat)).to(h.scalar_type());
}

HiddenGradients gelu_backward_by_libtorch(const torch::Tensor& da, const torch::Tensor& h) {
  const auto dh = at::gelu_backward(da.to(torch::kFloat), h.to(torch::kFloat)).to(h.scalar_type());
  return {dh, matrix_of_rows(dh).to(torch::kFloat).sum(0)};
}

#if VIT_WITH_CUDA
bool gelu_kernels_take(const torch::Tensor& h) {
  const auto dtype = h.scalar_type();
  return h.is_cuda() && (dtype == torch::kBFloat16 || dtype == torch::kHalf) && h.numel() > 0 &&
         h.is_contiguous() && detail::is_16_byte_aligned(h) && cuda::gelu_fits(h.size(-1));
}

torch::Tensor gelu_by_kernel(const torch::Tensor& h) {
  auto a = torch::empty_like(h, at::MemoryFormat::Contiguous);
  cuda::launch_gelu_forward(detail::half_type_of(h), h.data_ptr(), a.data_ptr(), h.numel(),
                            at::cuda::getCurrentCUDAStream().stream());
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return a;
}

HiddenGradients gelu_backward_by_kernel(const torch::Tensor& da, const torch::Tensor& h) {
  const int64_t d = h.size(-1), rows = h.numel() / d;
  const int sms = at::cuda::getCurrentDeviceProperties()->multiProcessorCount;
  const int64_t chunks = cuda::gelu_backward_chunks(rows, d, sms);
  auto partials = torch::empty({chunks, d}, h.options().dtype(torch::kFloat));
  auto dh = torch::empty_like(h, at::MemoryFormat::Contiguous);
  cuda::launch_gelu_backward(detail::half_type_of(h), da.data_ptr(), h.data_ptr(), dh.data_ptr(),
                             partials.data_ptr<float>(), rows, d, chunks,
                             at::cuda::getCurrentCUDAStream().stream());
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return {dh, partials.sum(0)};
}
#endif

torch::Tensor gelu_pass(const torch::Tensor& h) {
#if VIT_WITH_CUDA
  if (gelu_kernels_take(h)) return gelu_by_kernel(h);
#endif
  return gelu_by_libtorch(h);
}

HiddenGradients gelu_backward_pass(const torch::Tensor& da_in, const torch::Tensor& h) {
  auto da = da_in.contiguous();
#if VIT_WITH_CUDA
  if (gelu_kernels_take(h) && da.scalar_type() == h.scalar_type()) {
    if (!detail::is_16_byte_aligned(da)) da = da.clone();
    return gelu_backward_by_kernel(da, h);
  }
#endif
  return gelu_backward_by_libtorch(da, h);
}

// a = gelu(x W^T + b); h = x W^T + b is kept for the backward.
struct LinearGeluFunction : torch::autograd::Function<LinearGeluFunction> {
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& x,
                               const torch::Tensor& weight, const torch::Tensor& bias) {
    auto h = at::linear(x, weight, bias).contiguous();
    ctx->save_for_backward({x, weight, bias, h});
    return gelu_pass(h);
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    RECORD_FUNCTION("vit::gpu_linear_gelu_backward", std::vector<c10::IValue>());
    const auto s = ctx->get_saved_variables();
    const auto &x = s[0], &weight = s[1], &bias = s[2], &h = s[3];
    auto hidden = gelu_backward_pass(grads[0], h);
    const auto dh_rows = matrix_of_rows(hidden.dh);
    auto g = linear_input_and_weight_gradients(dh_rows, x, weight, ctx->needs_input_grad(0),
                                               ctx->needs_input_grad(1));
    torch::Tensor dbias;
    if (ctx->needs_input_grad(2)) dbias = bias_gradient_from_sum(bias, hidden.bias_sum);
    return {g.dx, g.dweight, dbias};
  }
};

}  // namespace

namespace detail {

torch::Tensor linear_gelu_function(const torch::Tensor& x, const torch::Tensor& weight,
                                   const torch::Tensor& bias) {
  return LinearGeluFunction::apply(x, weight, bias);
}

bool own_cuda_gelu_requested() {
  const char* value = std::getenv("VIT_CUDA_GELU");
  return value != nullptr && std::strcmp(value, "own") == 0;
}

}  // namespace detail

bool gpu_linear_gelu_applies(const torch::Tensor& x, const torch::Tensor& weight,
                             const torch::Tensor& bias) {
#if VIT_WITH_CUDA
  if (!product_reductions_apply(x, weight, bias)) return false;  // the CPU's calls leave here
  return detail::own_cuda_gelu_requested() && x.numel() > 0 && weight.dim() == 2 &&
         cuda::gelu_fits(weight.size(0)) && bias.dim() == 1 && bias.size(0) == weight.size(0);
#else
  (void)x, (void)weight, (void)bias;
  return false;
#endif
}

torch::Tensor gpu_linear_gelu(const torch::Tensor& x, const torch::Tensor& weight,
                              const torch::Tensor& bias) {
  if (gpu_linear_gelu_applies(x, weight, bias)) {
    RECORD_FUNCTION("vit::gpu_linear_gelu", std::vector<c10::IValue>({x}));  // for the profiler
    return detail::linear_gelu_function(x, weight, bias);
  }
  return torch::gelu(at::linear(x, weight, bias));
}

}  // namespace vit
