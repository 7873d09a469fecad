// Shape key: L layers, B batch, N tokens, D width, I = H*Dh, K classes.
#include "vit/analysis/residual_stream.hpp"

#include <torch/torch.h>

#include "vit/error.hpp"

namespace vit {
namespace {

BlockImpl& block_at(VisionTransformer& model, int64_t index) {
  return *model->blocks[static_cast<size_t>(index)]->as<Block>();
}

// The explicit softmax path: the probabilities are asked for (and dropped), so
// the attention is computed exactly as the other analyses see it.
AttentionCall explicit_call() {
  AttentionCall call;
  call.probabilities = true;
  return call;
}

}  // namespace

ResidualStream residual_stream(VisionTransformer& model, const at::Tensor& inputs,
                               bool with_heads) {
  torch::NoGradGuard no_grad;
  ResidualStream stream;
  auto x = model->embed(inputs.to(torch::kFloat));  // (B, N, D)
  stream.layers.push_back(x);
  AttentionCall call = explicit_call();
  call.head_outputs = with_heads;
  const auto depth = static_cast<int64_t>(model->blocks->size());
  for (int64_t l = 0; l < depth; ++l) {
    BlockResult r = block_at(model, l).run(x, call);
    x = r.out;
    stream.layers.push_back(x);
    if (with_heads) stream.heads.push_back(r.heads);  // (B, N, I)
  }
  return stream;
}

at::Tensor logits_after(VisionTransformer& model, const at::Tensor& before,
                        const BlockAblation& ablation) {
  torch::NoGradGuard no_grad;
  const auto depth = static_cast<int64_t>(model->blocks->size());
  if (ablation.block < 0 || ablation.block >= depth)
    throw Error("ablation: block " + std::to_string(ablation.block) + ", expected 0.." +
                std::to_string(depth - 1));
  if (ablation.head >= model->config().heads)
    throw Error("ablation: head " + std::to_string(ablation.head) + ", expected 0.." +
                std::to_string(model->config().heads - 1));
  AttentionCall edited = explicit_call();
  edited.removed_head = ablation.head;
  edited.removed_value = ablation.head_value;
  auto x = block_at(model, ablation.block).run(before, edited, ablation.skip).out;
  for (int64_t l = ablation.block + 1; l < depth; ++l)
    x = block_at(model, l).run(x, explicit_call()).out;
  return model->classify(x);  // (B, K)
}

}  // namespace vit
