#include "vit/kernels/gelu.hpp"

#include <ATen/Parallel.h>
#include <ATen/record_function.h>
#include <torch/autograd.h>
#include <torch/torch.h>

#include "kernel_operands.hpp"
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

}  // namespace

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
