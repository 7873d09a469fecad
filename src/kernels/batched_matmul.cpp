#include "vit/kernels/batched_matmul.hpp"

#include <ATen/Parallel.h>
#include <ATen/record_function.h>
#include <torch/autograd.h>
#include <torch/torch.h>

#include "kernel_operands.hpp"
#include "vit/autocast_state.hpp"

namespace vit {
namespace {

// out[i] = a[i] b[i], one matrix per iteration. Inside at::parallel_for each
// at::mm_out runs on the calling thread alone: LibTorch's BLAS does not start
// threads of its own inside a parallel region. Grad and inference mode are
// per thread and at::parallel_for does not hand them on, so each worker takes
// the caller's inference mode (an inference tensor takes writes only inside
// it) and turns grad mode off: the products are never differentiated
// themselves, autograd sees BatchedMatmul.
torch::Tensor products(const torch::Tensor& a, const torch::Tensor& b) {
  auto out = torch::empty({a.size(0), a.size(1), b.size(2)}, a.options());
  const bool inference = c10::InferenceMode::is_enabled();
  at::parallel_for(0, a.size(0), /*grain_size=*/1, [&](int64_t begin, int64_t end) {
    c10::InferenceMode inference_mode(inference);
    torch::NoGradGuard no_grad;
    for (int64_t i = begin; i < end; ++i) {
      auto slot = out.select(/*dim=*/0, i);
      at::mm_out(slot, a.select(/*dim=*/0, i), b.select(/*dim=*/0, i));
    }
  });
  return out;
}

class BatchedMatmul : public torch::autograd::Function<BatchedMatmul> {
 public:
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& a,
                               const torch::Tensor& b) {
    ctx->save_for_backward({a, b});
    return products(a, b);
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    RECORD_FUNCTION("vit::batched_matmul_backward", std::vector<c10::IValue>({grads[0]}));
    const auto saved = ctx->get_saved_variables();
    const auto &a = saved[0], &b = saved[1], &dy = grads[0];
    torch::Tensor da, db;
    if (ctx->needs_input_grad(0)) da = products(dy, b.transpose(1, 2));
    if (ctx->needs_input_grad(1)) db = products(a.transpose(1, 2), dy);
    return {da, db};
  }
};

}  // namespace

bool batched_matmul_uses_own_kernel(const torch::Tensor& a, const torch::Tensor& b) {
  const auto is_3d_float_on_cpu = [](const torch::Tensor& t) {
    return detail::is_dense_on_cpu(t) && t.scalar_type() == torch::kFloat && t.dim() == 3;
  };
  return is_3d_float_on_cpu(a) && is_3d_float_on_cpu(b) && !cpu_autocast_enabled() &&
         a.size(0) == b.size(0) && a.size(2) == b.size(1);
}

torch::Tensor batched_matmul(const torch::Tensor& a, const torch::Tensor& b) {
  RECORD_FUNCTION("vit::batched_matmul", std::vector<c10::IValue>({a, b}));
  if (!batched_matmul_uses_own_kernel(a, b)) return torch::matmul(a, b);
  const bool needs_graph =
      torch::GradMode::is_enabled() && (a.requires_grad() || b.requires_grad());
  return needs_graph ? BatchedMatmul::apply(a, b) : products(a, b);
}

}  // namespace vit
