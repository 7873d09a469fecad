#include "vit/kernels/product_reductions.hpp"

#include <torch/autograd.h>
#include <torch/torch.h>

#include "cpu_autocast.hpp"

namespace vit {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::tensor_list;

// x's rows as a matrix: (M, D) for x of (..., D).
torch::Tensor matrix_of_rows(const torch::Tensor& t) {
  return t.reshape({-1, t.size(-1)});
}

// 1^T m: the sum of m's rows, (cols), as one matrix product.
torch::Tensor sum_of_rows(const torch::Tensor& m) {
  return at::mm(torch::ones({1, m.size(0)}, m.options()), m).view({m.size(1)});
}

struct LayerNormProductGradients : torch::autograd::Function<LayerNormProductGradients> {
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& x,
                               const torch::Tensor& weight, const torch::Tensor& bias, double eps) {
    const int64_t d = x.size(-1);
    auto [x_hat, mean, rstd] = at::native_layer_norm(x, {d}, {}, {}, eps);
    ctx->save_for_backward({x_hat, weight, rstd});
    return at::addcmul(bias, x_hat, weight);  // bias + x_hat * weight
  }

  static tensor_list backward(AutogradContext* ctx, tensor_list grads) {
    const auto saved = ctx->get_saved_variables();
    const auto &x_hat = saved[0], &weight = saved[1], &rstd = saved[2];
    const auto dy = grads[0].contiguous();
    torch::Tensor dx, dweight, dbias;
    if (ctx->needs_input_grad(0)) {
      // LibTorch's LayerNorm backward with x_hat as its input, whose mean is
      // 0 and rstd 1: rstd^-1 dx, without the weight's and bias's gradients.
      dx = std::get<0>(
          at::native_layer_norm_backward(dy, x_hat, {x_hat.size(-1)}, torch::zeros_like(rstd),
                                         torch::ones_like(rstd), weight, {}, {true, false, false}));
      dx.mul_(rstd);
    }
    const auto dy_rows = matrix_of_rows(dy);
    if (ctx->needs_input_grad(1))
      dweight = at::mm(dy_rows.t(), matrix_of_rows(x_hat)).diagonal().contiguous();  // sum dy x_hat
    if (ctx->needs_input_grad(2)) dbias = sum_of_rows(dy_rows);
    return {dx, dweight, dbias, torch::Tensor()};
  }
};

struct LinearProductBiasGradient : torch::autograd::Function<LinearProductBiasGradient> {
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& x,
                               const torch::Tensor& weight, const torch::Tensor& bias) {
    ctx->save_for_backward({x, weight});
    return at::linear(x, weight, bias);
  }

  static tensor_list backward(AutogradContext* ctx, tensor_list grads) {
    const auto saved = ctx->get_saved_variables();
    const auto &x = saved[0], &weight = saved[1];
    const auto dy_rows = matrix_of_rows(grads[0].contiguous());  // (M, out)
    torch::Tensor dx, dweight, dbias;
    if (ctx->needs_input_grad(0)) dx = at::mm(dy_rows, weight).view(x.sizes());
    if (ctx->needs_input_grad(1)) dweight = at::mm(dy_rows.t(), matrix_of_rows(x));
    if (ctx->needs_input_grad(2)) dbias = sum_of_rows(dy_rows);
    return {dx, dweight, dbias};
  }
};

}  // namespace

torch::Tensor layer_norm_with_product_gradients(const torch::Tensor& x, const torch::Tensor& weight,
                                                const torch::Tensor& bias, double eps) {
  return LayerNormProductGradients::apply(x, weight, bias, eps);
}

torch::Tensor linear_with_product_bias_gradient(const torch::Tensor& x, const torch::Tensor& weight,
                                                const torch::Tensor& bias) {
  return LinearProductBiasGradient::apply(x, weight, bias);
}

bool product_reductions_apply(const torch::Tensor& x, const torch::Tensor& weight,
                              const torch::Tensor& bias) {
  if (!x.is_cuda() || !bias.defined()) return false;  // the CPU's every call leaves here
  const auto dtype = x.scalar_type();
  const bool low_precision = dtype == torch::kBFloat16 || dtype == torch::kHalf;
  const bool gradients = torch::GradMode::is_enabled() &&
                         (x.requires_grad() || weight.requires_grad() || bias.requires_grad());
  return low_precision && weight.scalar_type() == dtype && bias.scalar_type() == dtype &&
         x.dim() >= 2 && x.is_contiguous() && weight.is_contiguous() && gradients &&
         !autocast_is_on(c10::DeviceType::CUDA);
}

}  // namespace vit
