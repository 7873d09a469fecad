// Shape key: B batch, Np patch tokens, D width, H heads, Dh = D / H.
#include "vit/model/attention_pool.hpp"

#include <cmath>

#include <torch/torch.h>

#include "kernel_calls.hpp"
#include "layer_init.hpp"

namespace vit {

AttentionPoolImpl::AttentionPoolImpl(const ModelConfig& cfg) : heads_(cfg.heads) {
  const int64_t D = cfg.dim;
  latent = register_parameter("latent", torch::zeros({1, 1, D}));
  // timm gives the pool's projections biases whatever the blocks' qkv_bias.
  q = register_module("q", make_linear(D, D));
  kv = register_module("kv", make_linear(D, 2 * D));
  proj = register_module("proj", make_linear(D, D));
  norm = register_module("norm", make_norm(cfg));
  mlp = register_module("mlp", Mlp(D, cfg.mlp_dim, cfg.act_layer, /*dropout=*/0.0));
}

AttentionPoolResult AttentionPoolImpl::pool(const torch::Tensor& x) {
  const int64_t B = x.size(0), Np = x.size(1), D = x.size(2), Dh = D / heads_;
  const auto query = linear(q, latent.to(x.scalar_type()).expand({B, 1, D}))  // (B, 1, D)
                         .view({B, 1, heads_, Dh})
                         .transpose(1, 2);  // (B, H, 1, Dh)
  const auto keys_values = linear(kv, x)    // (B, Np, 2D)
                               .view({B, Np, 2, heads_, Dh})
                               .permute({2, 0, 3, 1, 4});  // (2, B, H, Np, Dh)
  const auto k = keys_values[0], v = keys_values[1];       // (B, H, Np, Dh) each
  const double scale = 1.0 / std::sqrt(static_cast<double>(Dh));
  auto probabilities =
      torch::softmax(torch::matmul(query, k.transpose(-2, -1)).to(torch::kFloat) * scale,
                     /*dim=*/-1);                                            // (B, H, 1, Np)
  const auto attended = torch::matmul(probabilities.to(v.scalar_type()), v)  // (B, H, 1, Dh)
                            .transpose(1, 2)
                            .reshape({B, 1, D});  // (B, 1, D)
  auto p = linear(proj, attended);
  p = p + mlp(normalized(norm, p));  // (B, 1, D)
  return {p.select(/*dim=*/1, /*index=*/0), std::move(probabilities)};
}

torch::Tensor AttentionPoolImpl::forward(const torch::Tensor& x) {
  return pool(x).pooled;  // (B, D)
}

}  // namespace vit
