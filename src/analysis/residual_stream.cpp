// Shape key: L layers, B batch, N tokens, D width, I = H*Dh, K classes.
#include "vit/analysis/residual_stream.hpp"

#include <torch/torch.h>

#include "vit/error.hpp"

namespace vit {
namespace {

// Keeps the stream after each block, and its merged heads when asked.
class StreamRecorder : public BlockVisitor {
 public:
  StreamRecorder(ResidualStream& stream, bool with_heads)
      : stream_(stream), with_heads_(with_heads) {}
  void before(int64_t, AttentionCall& call, BlockSkip&) override {
    call.head_outputs = with_heads_;
  }
  void after(int64_t, BlockResult& result) override {
    stream_.layers.push_back(result.out.tensor());           // (B, N, D)
    if (with_heads_) stream_.heads.push_back(result.heads);  // (B, N, I)
  }

 private:
  ResidualStream& stream_;
  bool with_heads_;
};

// Applies one ablation in its block.
class AblationEdit : public BlockVisitor {
 public:
  explicit AblationEdit(const BlockAblation& ablation) : ablation_(ablation) {}
  void before(int64_t layer, AttentionCall& call, BlockSkip& skip) override {
    if (layer != ablation_.block) return;
    call.removal = {ablation_.head, ablation_.head_value};
    skip = ablation_.skip;
  }

 private:
  const BlockAblation& ablation_;
};

}  // namespace

ResidualStream residual_stream(VisionTransformer& model, const at::Tensor& inputs,
                               bool with_heads) {
  torch::NoGradGuard no_grad;
  return stream_from(model, model->embed(inputs.to(torch::kFloat)), with_heads);  // (B, N, D)
}

ResidualStream stream_from(VisionTransformer& model, const at::Tensor& embedded, bool with_heads) {
  ResidualStream stream;
  StreamRecorder recorder(stream, with_heads);
  stream.layers.push_back(embedded);
  BlockPass pass;
  pass.visitor = &recorder;
  model->forward_blocks(embedded, pass);
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
  AblationEdit edit(ablation);
  BlockPass pass;
  pass.first = ablation.block;
  pass.visitor = &edit;
  return model->stream_logits(model->forward_blocks(before, pass));  // (B, K)
}

at::Tensor logits_from_layer(VisionTransformer& model, const at::Tensor& stream, int64_t layer) {
  torch::NoGradGuard no_grad;
  if (layer == model->config().depth) return model->stream_logits(stream);  // (B, K)
  return logits_after(model, stream, BlockAblation(layer));
}

}  // namespace vit
