// Shape key: L layers, H heads, n images, B batch, N tokens, I = H*Dh, K classes.
#include "vit/analysis/ablation.hpp"

#include <torch/torch.h>

#include "vit/analysis/residual_stream.hpp"
#include "vit/error.hpp"

namespace vit {
namespace {

// Running sums of the cross-entropy and the correct predictions of one variant.
struct Totals {
  double loss = 0;
  int64_t correct = 0;
  void add(const at::Tensor& logits, const at::Tensor& classes) {
    loss += torch::nn::functional::cross_entropy(
                logits.to(torch::kDouble), classes,
                torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kSum))
                .item<double>();
    correct += logits.argmax(/*dim=*/1).eq(classes).sum().item<int64_t>();
  }
  LossAndAccuracy mean(int64_t count) const {
    return {loss / static_cast<double>(count),
            static_cast<double>(correct) / static_cast<double>(count)};
  }
};

// The mean over every image of each block's merged heads: L of (N, I).
std::vector<at::Tensor> mean_head_outputs(VisionTransformer& model, const ImageBatches& images) {
  std::vector<at::Tensor> sums;
  images.for_each([&](int64_t, const at::Tensor& inputs) {
    const ResidualStream stream = residual_stream(model, inputs, /*with_heads=*/true);
    if (sums.empty()) {
      for (const auto& h : stream.heads)
        sums.push_back(h.to(torch::kDouble).sum(/*dim=*/0));
    } else {
      for (size_t l = 0; l < sums.size(); ++l)
        sums[l] += stream.heads[l].to(torch::kDouble).sum(/*dim=*/0);
    }
  });
  for (auto& s : sums)
    s = (s / static_cast<double>(images.count)).to(torch::kFloat);
  return sums;
}

}  // namespace

AblationResult ablate(VisionTransformer& model, const ImageBatches& images,
                      const at::Tensor& labels, AblationMode mode) {
  if (images.count < 1) throw Error("ablation: no images, expected at least one");
  if (labels.defined() && (labels.dim() != 1 || labels.size(0) != images.count))
    throw Error("ablation: labels of shape " + c10::str(labels.sizes()) + " for " +
                std::to_string(images.count) + " images");
  const int64_t depth = model->config().depth, heads = model->config().heads;
  const int64_t head_dim = model->config().head_dim();
  const std::vector<at::Tensor> means =
      mode == AblationMode::kMean ? mean_head_outputs(model, images) : std::vector<at::Tensor>();

  Totals baseline;
  std::vector<std::vector<Totals>> head_totals(depth, std::vector<Totals>(heads));
  std::vector<Totals> attention(depth), mlp(depth);
  images.for_each([&](int64_t first, const at::Tensor& inputs) {
    const ResidualStream stream = residual_stream(model, inputs);
    const auto logits = model->stream_logits(stream.layers.back());  // (B, K)
    const auto classes = labels.defined()
                             ? labels.slice(0, first, first + inputs.size(0)).to(logits.device())
                             : logits.argmax(/*dim=*/1);
    baseline.add(logits, classes);
    for (int64_t l = 0; l < depth; ++l) {
      const auto& before = stream.layers[l];  // enters block l
      for (int64_t h = 0; h < heads; ++h) {
        BlockAblation removal{l, h};
        if (mode == AblationMode::kMean)
          removal.head_value = means[l].narrow(/*dim=*/1, h * head_dim, head_dim);  // (N, Dh)
        head_totals[l][h].add(logits_after(model, before, removal), classes);
      }
      BlockAblation no_attention{l};
      no_attention.skip.attention = true;
      attention[l].add(logits_after(model, before, no_attention), classes);
      BlockAblation no_mlp{l};
      no_mlp.skip.mlp = true;
      mlp[l].add(logits_after(model, before, no_mlp), classes);
    }
  });

  AblationResult result;
  result.baseline = baseline.mean(images.count);
  for (int64_t l = 0; l < depth; ++l) {
    result.heads.emplace_back();
    for (const auto& t : head_totals[l])
      result.heads.back().push_back(t.mean(images.count));
    result.attention.push_back(attention[l].mean(images.count));
    result.mlp.push_back(mlp[l].mean(images.count));
  }
  return result;
}

}  // namespace vit
