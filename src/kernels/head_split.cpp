#include "vit/kernels/head_split.hpp"

#include <ATen/record_function.h>
#include <torch/autograd.h>
#include <torch/torch.h>

#include <stdexcept>
#include <string>

namespace vit {
namespace {

// x as (B, N, P, H, Dh).
torch::Tensor parts_view(const torch::Tensor& x, int64_t parts, int64_t heads, int64_t head_dim) {
  return x.reshape({x.size(0), x.size(1), parts, heads, head_dim});
}

std::vector<torch::Tensor> copy_out_heads(const torch::Tensor& x, int64_t parts, int64_t heads,
                                          int64_t head_dim) {
  const auto packed = parts_view(x, parts, heads, head_dim);
  std::vector<torch::Tensor> out;
  out.reserve(parts);
  for (int64_t p = 0; p < parts; ++p) {
    auto head_major = packed.select(/*dim=*/2, p).transpose(1, 2);  // (B, H, N, Dh), strided
    out.push_back(torch::empty(head_major.sizes(), x.options()).copy_(head_major));
  }
  return out;
}

class SplitHeads : public torch::autograd::Function<SplitHeads> {
 public:
  static torch::autograd::variable_list forward(torch::autograd::AutogradContext* ctx,
                                                const torch::Tensor& x, int64_t parts,
                                                int64_t heads, int64_t head_dim) {
    ctx->saved_data["parts"] = parts;
    ctx->saved_data["heads"] = heads;
    ctx->saved_data["head_dim"] = head_dim;
    ctx->saved_data["sizes"] = x.sizes().vec();
    ctx->saved_data["dtype"] = x.scalar_type();  // the gradient's
    ctx->saved_data["device"] = x.device();
    return copy_out_heads(x, parts, heads, head_dim);
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    RECORD_FUNCTION("vit::split_heads_backward", std::vector<c10::IValue>());
    const int64_t parts = ctx->saved_data["parts"].toInt();
    const auto sizes = ctx->saved_data["sizes"].toIntVector();
    auto dx = torch::empty(sizes, torch::TensorOptions()
                                      .dtype(ctx->saved_data["dtype"].toScalarType())
                                      .device(ctx->saved_data["device"].toDevice()));
    const auto packed = parts_view(dx, parts, ctx->saved_data["heads"].toInt(),
                                   ctx->saved_data["head_dim"].toInt());
    for (int64_t p = 0; p < parts; ++p) {
      auto slot = packed.select(/*dim=*/2, p);  // (B, N, H, Dh)
      if (grads[p].defined())
        slot.copy_(grads[p].transpose(1, 2));
      else
        slot.zero_();
    }
    return {dx, {}, {}, {}};
  }
};

}  // namespace

std::vector<torch::Tensor> split_heads(const torch::Tensor& x, int64_t parts, int64_t heads,
                                       int64_t head_dim) {
  if (x.dim() != 3 || x.size(2) != parts * heads * head_dim)
    throw std::invalid_argument("split_heads: expected (B, N, " +
                                std::to_string(parts * heads * head_dim) + "), got " +
                                c10::str(x.sizes()));
  RECORD_FUNCTION("vit::split_heads", std::vector<c10::IValue>({x}));
  if (!x.device().is_cpu())  // unmeasured there: the strided views, as LibTorch makes them
    return parts_view(x, parts, heads, head_dim).permute({2, 0, 3, 1, 4}).unbind(0);
  if (torch::GradMode::is_enabled() && x.requires_grad())
    return SplitHeads::apply(x, parts, heads, head_dim);
  return copy_out_heads(x, parts, heads, head_dim);
}

}  // namespace vit
