// LibTorch's LayerNorm GammaBetaBackward runs far below the GPU's memory speed on
// this job's shapes.
// - LayerNorm (where kernels/gpu_residual_norm does not take its rows) is LibTorch's
//   forward, with its affine part, and LibTorch's backward for x's gradient alone.
//   The weight's and bias's gradients, sum dy (x - mean) rstd and sum dy over the
//   rows, come from one pass over dy and x
//   (kernels/cuda/layer_norm_parameter_gradients.cu), summed in fp32. (Before, the
//   normalized x was kept, the affine part applied in a pass of its own, the weight's
//   gradient taken as the diagonal of dy^T x_hat, and x's gradient rescaled by rstd
//   in another pass.)
// - A linear layer is LibTorch's linear forward, and its backward's bias gradient is
//   1^T dy, a matrix product, which cuBLAS runs near memory speed. Where the weight
//   or bias has a gradient buffer already (the weight mirror's slices of one flat
//   vector, train/weight_mirror), the product adds into it (beta = 1) and hands
//   autograd no gradient, which it would otherwise add there in a kernel of its own.
// The model takes these on CUDA for bf16 and fp16 tensors outside autocast
// (train.bf16_activations); since they run on any device, the CPU tests check them
// against LibTorch.
#include "vit/kernels/product_reductions.hpp"

#include <torch/autograd.h>
#include <torch/torch.h>

#include "linear_gradients.hpp"
#include "vit/autocast_state.hpp"
#include "vit/build_features.hpp"

#if VIT_WITH_CUDA
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>

#include "cuda/layer_norm_parameter_gradients.hpp"
#include "cuda_operands.hpp"
#endif

namespace vit {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::tensor_list;

// 1^T m: the sum of m's rows, (cols), as one matrix product.
torch::Tensor sum_of_rows(const torch::Tensor& m) {
  return at::mm(torch::ones({1, m.size(0)}, m.options()), m).view({m.size(1)});
}

#if VIT_WITH_CUDA
// Whether kernels/cuda's one pass takes these: contiguous 16-bit CUDA
// tensors of one dtype with rows of an even width, 4-byte aligned, and the
// rows' statistics in fp32, as LibTorch's CUDA LayerNorm keeps them.
bool cuda_parameter_sums_fit(const torch::Tensor& dy, const torch::Tensor& x,
                             const torch::Tensor& mean, const torch::Tensor& rstd) {
  const auto dtype = x.scalar_type();
  const auto aligned = [](const torch::Tensor& t) {
    return reinterpret_cast<uintptr_t>(t.data_ptr()) % 4 == 0;
  };
  const auto statistics = [&](const torch::Tensor& t) {
    return t.is_cuda() && t.scalar_type() == torch::kFloat && t.is_contiguous() &&
           t.numel() * x.size(-1) == x.numel();
  };
  return x.is_cuda() && dy.is_cuda() && x.numel() > 0 && dy.scalar_type() == dtype &&
         (dtype == torch::kBFloat16 || dtype == torch::kHalf) && x.is_contiguous() &&
         dy.is_contiguous() && dy.sizes() == x.sizes() && x.size(-1) % 2 == 0 && aligned(x) &&
         aligned(dy) && statistics(mean) && statistics(rstd);
}

torch::Tensor cuda_parameter_sums(const torch::Tensor& dy, const torch::Tensor& x,
                                  const torch::Tensor& mean, const torch::Tensor& rstd) {
  const int64_t d = x.size(-1), rows = x.numel() / d;
  const int sms = at::cuda::getCurrentDeviceProperties()->multiProcessorCount;
  const int64_t chunks = cuda::layer_norm_parameter_gradient_chunks(rows, d, sms);
  auto partials = torch::empty({chunks, 2, d}, x.options().dtype(torch::kFloat));
  cuda::launch_layer_norm_parameter_gradients(detail::half_type_of(x), dy.data_ptr(), x.data_ptr(),
                                              mean.data_ptr<float>(), rstd.data_ptr<float>(),
                                              partials.data_ptr<float>(), rows, d, chunks,
                                              at::cuda::getCurrentCUDAStream().stream());
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return partials.sum(0);
}
#endif

// LayerNorm's weight and bias gradients, (2, D) fp32: the sums over x's
// rows of dy (x - mean) rstd and of dy. mean and rstd hold one value a row.
torch::Tensor layer_norm_parameter_sums(const torch::Tensor& dy, const torch::Tensor& x,
                                        const torch::Tensor& mean, const torch::Tensor& rstd) {
#if VIT_WITH_CUDA
  if (cuda_parameter_sums_fit(dy, x, mean, rstd)) return cuda_parameter_sums(dy, x, mean, rstd);
#endif
  // Elsewhere (the CPU, odd widths): the same sums in fp32 by LibTorch.
  const auto dy_rows = matrix_of_rows(dy).to(torch::kFloat);
  const auto x_hat =
      (matrix_of_rows(x).to(torch::kFloat) - mean.reshape({-1, 1}).to(torch::kFloat)) *
      rstd.reshape({-1, 1}).to(torch::kFloat);
  return torch::stack({(dy_rows * x_hat).sum(0), dy_rows.sum(0)});
}

struct LayerNormProductGradients : torch::autograd::Function<LayerNormProductGradients> {
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& x,
                               const torch::Tensor& weight, const torch::Tensor& bias, double eps) {
    auto [y, mean, rstd] = at::native_layer_norm(x, {x.size(-1)}, weight, bias, eps);
    ctx->save_for_backward({x, weight, mean, rstd});
    return y;
  }

  static tensor_list backward(AutogradContext* ctx, tensor_list grads) {
    const auto saved = ctx->get_saved_variables();
    const auto &x = saved[0], &weight = saved[1], &mean = saved[2], &rstd = saved[3];
    const auto dy = grads[0].contiguous();
    torch::Tensor dx, dweight, dbias;
    if (ctx->needs_input_grad(0))
      dx = std::get<0>(at::native_layer_norm_backward(dy, x, {x.size(-1)}, mean, rstd, weight, {},
                                                      {true, false, false}));
    if (ctx->needs_input_grad(1) || ctx->needs_input_grad(2)) {
      const auto sums = layer_norm_parameter_sums(dy, x, mean, rstd);
      if (ctx->needs_input_grad(1)) dweight = sums[0].to(weight.scalar_type());
      if (ctx->needs_input_grad(2)) dbias = sums[1].to(weight.scalar_type());  // bias's dtype
    }
    return {dx, dweight, dbias, torch::Tensor()};
  }
};

struct LinearProductBiasGradient : torch::autograd::Function<LinearProductBiasGradient> {
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& x,
                               const torch::Tensor& weight, const torch::Tensor& bias) {
    ctx->save_for_backward({x, weight, bias});
    return at::linear(x, weight, bias);
  }

  // Where the bias's gradient has a buffer already, the product adds to it
  // in place, as the weight's (linear_input_and_weight_gradients).
  static tensor_list backward(AutogradContext* ctx, tensor_list grads) {
    const auto saved = ctx->get_saved_variables();
    const auto &x = saved[0], &weight = saved[1], &bias = saved[2];
    const auto dy_rows = matrix_of_rows(grads[0].contiguous());  // (M, out)
    auto g = linear_input_and_weight_gradients(dy_rows, x, weight, ctx->needs_input_grad(0),
                                               ctx->needs_input_grad(1));
    torch::Tensor dbias;
    if (ctx->needs_input_grad(2)) {
      auto buffer = preset_gradient(bias, bias);
      const auto ones = torch::ones({1, dy_rows.size(0)}, dy_rows.options());
      if (buffer.defined())
        buffer.view({1, -1}).addmm_(ones, dy_rows);  // + 1^T dy
      else
        dbias = sum_of_rows(dy_rows);
    }
    return {g.dx, g.dweight, dbias};
  }
};

}  // namespace

torch::Tensor preset_gradient(const torch::Tensor& parameter, const torch::Tensor& gradient_like) {
  if (!parameter.is_leaf()) return {};
  const auto& grad = parameter.grad();
  if (!grad.defined() || grad.sizes() != gradient_like.sizes() ||
      grad.scalar_type() != gradient_like.scalar_type() || !grad.is_contiguous())
    return {};
  return grad;
}

// A preset weight gradient takes the product in place (cuBLAS's beta = 1, the same
// sum at no cost), so that autograd adds nothing there in a pass of its own.
LinearGradients linear_input_and_weight_gradients(const torch::Tensor& dy_rows,
                                                  const torch::Tensor& x,
                                                  const torch::Tensor& weight, bool want_dx,
                                                  bool want_dweight) {
  LinearGradients g;
  if (want_dx) g.dx = at::mm(dy_rows, weight).view(x.sizes());
  if (want_dweight) {
    auto buffer = preset_gradient(weight, weight);
    if (buffer.defined())
      buffer.addmm_(dy_rows.t(), matrix_of_rows(x));
    else
      g.dweight = at::mm(dy_rows.t(), matrix_of_rows(x));
  }
  return g;
}

torch::Tensor bias_gradient_from_sum(const torch::Tensor& bias, const torch::Tensor& sum) {
  auto buffer = preset_gradient(bias, bias);
  if (!buffer.defined()) return sum.to(bias.scalar_type());
  buffer.add_(sum);
  return {};
}

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
