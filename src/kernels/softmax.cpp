// Our kernel (kernels/simd/softmax.inc), forward and backward, folds in the scale
// and the casts: LibTorch takes a pass for the scale, one to widen bf16 scores to
// fp32, one for the softmax, one to narrow the probabilities to bf16 for the next
// product, and the same again backward. LibTorch 1.13's fp32 softmax is also slow on
// short rows such as the attention's (measured: docs/benchmarks.md, "Why the own
// kernels").
#include "vit/kernels/softmax.hpp"

#include <ATen/Parallel.h>
#include <ATen/record_function.h>
#include <torch/autograd.h>
#include <torch/torch.h>

#include <stdexcept>

#include "kernel_operands.hpp"
#include "simd/kernels.hpp"

namespace vit {
namespace {

// Values per parallel task: enough work to outweigh handing it to a thread.
constexpr int64_t kGrainValues = 16384;

int64_t grain_rows(int64_t n) {
  return std::max<int64_t>(1, kGrainValues / std::max<int64_t>(n, 1));
}

template <typename In, typename Out>
void forward_as(const torch::Tensor& x, torch::Tensor& y, float scale) {
  const int64_t n = x.size(-1), rows = x.numel() / n;
  const In* in = x.data_ptr<In>();
  Out* out = y.data_ptr<Out>();
  at::parallel_for(0, rows, grain_rows(n), [&](int64_t begin, int64_t end) {
    VIT_SIMD_DISPATCH(softmax_forward(in + begin * n, out + begin * n, end - begin, n, scale));
  });
}

torch::Tensor forward_kernel(const torch::Tensor& x, double scale, torch::ScalarType out_dtype) {
  auto y = torch::empty(x.sizes(), x.options().dtype(out_dtype));
  if (x.numel() == 0) return y;
  const auto s = static_cast<float>(scale);
  const bool in_float = x.scalar_type() == torch::kFloat, out_float = out_dtype == torch::kFloat;
  if (in_float && out_float) forward_as<float, float>(x, y, s);
  if (in_float && !out_float) forward_as<float, c10::BFloat16>(x, y, s);
  if (!in_float && out_float) forward_as<c10::BFloat16, float>(x, y, s);
  if (!in_float && !out_float) forward_as<c10::BFloat16, c10::BFloat16>(x, y, s);
  return y;
}

template <typename G, typename Out>
void backward_as(const torch::Tensor& dy, const torch::Tensor& y, torch::Tensor& dx, float scale) {
  const int64_t n = y.size(-1), rows = y.numel() / n;
  const G *grad = dy.data_ptr<G>(), *probs = y.data_ptr<G>();
  Out* out = dx.data_ptr<Out>();
  at::parallel_for(0, rows, grain_rows(n), [&](int64_t begin, int64_t end) {
    VIT_SIMD_DISPATCH(softmax_backward(grad + begin * n, probs + begin * n, out + begin * n,
                                       end - begin, n, scale));
  });
}

// dy and y in y's dtype; dx in `x_dtype`.
torch::Tensor backward_kernel(const torch::Tensor& dy, const torch::Tensor& y, double scale,
                              torch::ScalarType x_dtype) {
  auto dx = torch::empty(y.sizes(), y.options().dtype(x_dtype));
  if (y.numel() == 0) return dx;
  const auto s = static_cast<float>(scale);
  const bool y_float = y.scalar_type() == torch::kFloat, x_float = x_dtype == torch::kFloat;
  if (y_float && x_float) backward_as<float, float>(dy, y, dx, s);
  if (y_float && !x_float) backward_as<float, c10::BFloat16>(dy, y, dx, s);
  if (!y_float && x_float) backward_as<c10::BFloat16, float>(dy, y, dx, s);
  if (!y_float && !x_float) backward_as<c10::BFloat16, c10::BFloat16>(dy, y, dx, s);
  return dx;
}

class ScaledSoftmax : public torch::autograd::Function<ScaledSoftmax> {
 public:
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& x,
                               double scale, torch::ScalarType out_dtype) {
    auto y = forward_kernel(x, scale, out_dtype);
    ctx->save_for_backward({y});
    ctx->saved_data["scale"] = scale;
    ctx->saved_data["x_dtype"] = x.scalar_type();
    return y;
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    RECORD_FUNCTION("vit::scaled_softmax_backward", std::vector<c10::IValue>({grads[0]}));
    const auto y = ctx->get_saved_variables()[0];
    const auto dy = grads[0].to(y.scalar_type()).contiguous();
    return {backward_kernel(dy, y, ctx->saved_data["scale"].toDouble(),
                            ctx->saved_data["x_dtype"].toScalarType()),
            {},
            {}};
  }
};

}  // namespace

bool scaled_softmax_uses_own_kernel(const torch::Tensor& x, torch::ScalarType out_dtype) {
  const bool supported = detail::simd_level() != detail::SimdLevel::kNone;
  return supported && detail::is_contiguous_on_cpu(x) && x.dim() >= 1 &&
         detail::is_float_or_bf16(x.scalar_type()) && detail::is_float_or_bf16(out_dtype);
}

torch::Tensor scaled_softmax(const torch::Tensor& x, double scale, torch::ScalarType out_dtype) {
  if (!detail::is_float_or_bf16(out_dtype))
    throw std::invalid_argument("scaled_softmax: out_dtype must be float or bfloat16, got " +
                                std::string(c10::toString(out_dtype)));
  RECORD_FUNCTION("vit::scaled_softmax", std::vector<c10::IValue>({x}));  // for the step profiler
  if (!scaled_softmax_uses_own_kernel(x, out_dtype))
    return torch::softmax(x * scale, /*dim=*/-1, torch::kFloat).to(out_dtype);
  if (torch::GradMode::is_enabled() && x.requires_grad())
    return ScaledSoftmax::apply(x, scale, out_dtype);
  return forward_kernel(x, scale, out_dtype);
}

}  // namespace vit
