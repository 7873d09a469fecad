// Debian's LibTorch runs fp32 matrix products through OpenBLAS, and it links oneDNN
// too, for bf16 and convolutions. On the job's shapes oneDNN's sgemm is faster than
// OpenBLAS, and fp32 training is mostly these products (measured:
// docs/benchmarks.md, "Why the own kernels"). VIT_WITH_ONEDNN_SGEMM is set where
// LibTorch itself links the system's libdnnl; pip's LibTorch brings MKL instead.
#include "vit/kernels/linear.hpp"

#include <ATen/record_function.h>
#include <torch/autograd.h>
#include <torch/torch.h>

#include "kernel_operands.hpp"
#include "vit/autocast_state.hpp"
#include "vit/build_features.hpp"
#include "vit/kernels/product_reductions.hpp"

#if VIT_WITH_ONEDNN_SGEMM
#include <oneapi/dnnl/dnnl.h>
#endif

namespace vit {
namespace {

#if VIT_WITH_ONEDNN_SGEMM
// A 2-D fp32 matrix whose rows are contiguous, as sgemm reads it: op is 'N'
// to use it as it is, 'T' to use its transpose.
struct Operand {
  const torch::Tensor& t;
  char op;
};

// out = op(a) op(b) + beta out, row-major, on oneDNN's threads (OpenMP's, as
// LibTorch's: at::set_num_threads sets both; inside a parallel region oneDNN
// runs on the calling thread alone).
void sgemm(Operand a, Operand b, float beta, torch::Tensor& out) {
  const int64_t m = out.size(0), n = out.size(1);
  const int64_t k = a.op == 'N' ? a.t.size(1) : a.t.size(0);
  // The distance between rows; a single row's stride is arbitrary (LibTorch
  // calls a (1, k) view contiguous whatever it is), and sgemm wants >= k.
  const auto ld = [](const torch::Tensor& t) { return t.size(0) == 1 ? t.size(1) : t.stride(0); };
  const auto status =
      dnnl_sgemm(a.op, b.op, m, n, k, /*alpha=*/1.0f, a.t.data_ptr<float>(), ld(a.t),
                 b.t.data_ptr<float>(), ld(b.t), beta, out.data_ptr<float>(), ld(out));
  TORCH_CHECK(status == dnnl_success, "oneDNN's sgemm failed (status ", static_cast<int>(status),
              ") on ", m, " x ", k, " by ", k, " x ", n);
}

// x as a matrix of rows of `in`, with contiguous rows: a view where the rows
// are evenly spaced (contiguous x, or the class token's narrow of it), else a
// copy.
torch::Tensor as_rows(const torch::Tensor& x) {
  auto rows = x.reshape({-1, x.size(-1)});
  const bool rows_apart = rows.size(0) == 1 || rows.stride(0) >= rows.size(1);
  return (rows.stride(1) == 1 || rows.size(1) == 1) && rows_apart ? rows : rows.contiguous();
}

// (rows, in) x (out, in)^T (+ bias in every row) -> (rows, out). With a bias,
// its rows are written first and sgemm adds onto them (beta 1), as addmm does.
torch::Tensor product(const torch::Tensor& rows, const torch::Tensor& weight,
                      const torch::Tensor& bias) {
  auto out = torch::empty({rows.size(0), weight.size(0)}, rows.options());
  if (bias.defined()) out.copy_(bias.expand_as(out));
  sgemm({rows, 'N'}, {weight, 'T'}, bias.defined() ? 1.0f : 0.0f, out);
  return out;
}

torch::Tensor shaped_like_input(const torch::Tensor& out, const torch::Tensor& x) {
  auto sizes = x.sizes().vec();
  sizes.back() = out.size(1);
  return out.view(sizes);
}

// Applied to (x, weight, bias), or to (x, weight) for a layer without a bias:
// LibTorch 1.13's Function::apply takes no undefined tensor among its inputs.
class OneDnnLinear : public torch::autograd::Function<OneDnnLinear> {
 public:
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& x,
                               const torch::Tensor& weight, const torch::Tensor& bias) {
    auto rows = as_rows(x);
    ctx->save_for_backward({rows, weight});
    ctx->saved_data["has_bias"] = bias.defined();
    return shaped_like_input(product(rows, weight, bias), x);
  }

  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& x,
                               const torch::Tensor& weight) {
    return forward(ctx, x, weight, torch::Tensor());
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    RECORD_FUNCTION("vit::linear_backward", std::vector<c10::IValue>({grads[0]}));
    const auto saved = ctx->get_saved_variables();
    const auto &rows = saved[0], &weight = saved[1];
    const auto dy = as_rows(grads[0]);  // (rows, out)
    torch::Tensor dx, dweight, dbias;
    if (ctx->needs_input_grad(0)) {
      dx = torch::empty({rows.size(0), weight.size(1)}, dy.options());
      sgemm({dy, 'N'}, {weight, 'N'}, 0.0f, dx);  // dy W
      auto sizes = grads[0].sizes().vec();
      sizes.back() = weight.size(1);
      dx = dx.view(sizes);
    }
    if (ctx->needs_input_grad(1)) {
      dweight = torch::empty_like(weight, at::MemoryFormat::Contiguous);
      sgemm({dy, 'T'}, {rows, 'N'}, 0.0f, dweight);  // dy^T x
    }
    if (ctx->saved_data["has_bias"].toBool() && ctx->needs_input_grad(2)) dbias = dy.sum(/*dim=*/0);
    return {dx, dweight, dbias};  // without a bias, apply() drops the undefined third
  }
};
#endif

}  // namespace

bool linear_uses_own_kernel(const torch::Tensor& x, const torch::Tensor& weight,
                            const torch::Tensor& bias) {
#if VIT_WITH_ONEDNN_SGEMM
  const auto fp32_on_cpu = [](const torch::Tensor& t) {
    return detail::is_dense_on_cpu(t) && t.scalar_type() == torch::kFloat;
  };
  if (!fp32_on_cpu(x) || !fp32_on_cpu(weight) || x.dim() < 1 || weight.dim() != 2 ||
      !weight.is_contiguous() || x.size(-1) != weight.size(1) || x.numel() == 0 ||
      weight.numel() == 0 || cpu_autocast_enabled())
    return false;
  return !bias.defined() ||
         (fp32_on_cpu(bias) && bias.dim() == 1 && bias.size(0) == weight.size(0));
#else
  (void)x, (void)weight, (void)bias;
  return false;
#endif
}

torch::Tensor linear(const torch::Tensor& x, const torch::Tensor& weight,
                     const torch::Tensor& bias) {
#if VIT_WITH_ONEDNN_SGEMM
  if (linear_uses_own_kernel(x, weight, bias)) {
    RECORD_FUNCTION("vit::linear", std::vector<c10::IValue>({x, weight}));  // for the profiler
    const bool needs_graph =
        torch::GradMode::is_enabled() &&
        (x.requires_grad() || weight.requires_grad() || (bias.defined() && bias.requires_grad()));
    if (needs_graph)
      return bias.defined() ? OneDnnLinear::apply(x, weight, bias) : OneDnnLinear::apply(x, weight);
    return shaped_like_input(product(as_rows(x), weight, bias), x);
  }
#endif
  if (product_reductions_apply(x, weight, bias))  // on GPUs, bf16 end to end
    return linear_with_product_bias_gradient(x, weight, bias);
  return at::linear(x, weight, bias);
}

}  // namespace vit
