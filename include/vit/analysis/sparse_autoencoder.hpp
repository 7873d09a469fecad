#pragma once
// A sparse autoencoder on one layer's residual stream (Bricken et al., 2023): a TopK
// SAE (Gao et al., 2024) or a ReLU SAE with an L1 penalty, trained on patch tokens:
//   z = act(W_enc^T (x - b_dec) + b_enc),  x_hat = W_dec^T z + b_dec,
// act = ReLU of the k largest pre-activations (TopK), or ReLU. Each feature's
// decoder row is kept at unit norm, so z holds the feature's size.
// Shape key: n tokens, D width, F features, B images, P patches, K classes.
#include <cstdint>
#include <vector>

#include <ATen/core/Tensor.h>

#include "vit/analysis/image_batches.hpp"
#include "vit/enum_names.hpp"
#include "vit/model/vision_transformer.hpp"

namespace vit {

struct SparseAutoencoder {
  at::Tensor W_enc, b_enc, W_dec, b_dec;  // float (D, F), (F), (F, D), (D)
  int64_t k = 32;                         // TopK's k; 0: ReLU (with an L1 penalty in training)

  // Random unit decoder rows, the encoder their transpose, zero biases. Throws
  // vit::Error for width or features < 1, or k > features.
  static SparseAutoencoder random(int64_t width, int64_t features, int64_t k, uint64_t seed);
  at::Tensor encode(const at::Tensor& x) const;  // (n, D) -> (n, F), >= 0
  at::Tensor decode(const at::Tensor& z) const;  // (n, F) -> (n, D)
  int64_t width() const { return W_enc.size(0); }
  int64_t features() const { return W_enc.size(1); }
};

// Adam (betas 0.9, 0.999), or plain SGD steps of -lr times the gradient.
enum class SaeOptimizer { kAdam, kSgd };
template <>
struct EnumNames<SaeOptimizer> {
  static constexpr std::pair<SaeOptimizer, const char*> table[] = {{SaeOptimizer::kAdam, "adam"},
                                                                   {SaeOptimizer::kSgd, "sgd"}};
};

struct SaeTraining {
  int64_t epochs = 10;
  int64_t batch = 1024;  // tokens per step
  double lr = 1e-3;
  SaeOptimizer optimizer = SaeOptimizer::kAdam;
  double l1 = 0.0;  // the ReLU SAE's penalty on the mean sum of z (k = 0)
  // Features that fired on none of an epoch's tokens are resampled at its end (not
  // after the last), as Bricken et al.; the optimizer then starts afresh.
  bool resample_dead = true;
  uint64_t seed = 0;  // the token order and the resampled tokens
  // b_dec starts at the tokens' mean; off to go on from an SAE's own b_dec.
  bool centre_decoder_bias = true;
};

struct SaeTrainingReport {
  int64_t steps = 0;
  int64_t resampled = 0;                 // features, over all epochs
  std::vector<double> epoch_losses;      // the mean training loss of each epoch
  std::vector<int64_t> epoch_resampled;  // the features resampled at each epoch's end
};

// Trains on float `tokens` (n, D), on their device. Throws vit::Error for tokens of
// another width or none.
SaeTrainingReport train_sae(SparseAutoencoder& sae, const at::Tensor& tokens,
                            const SaeTraining& training);

struct SaeQuality {
  double explained_variance = 0;  // 1 - sum ||x - x_hat||^2 / sum ||x - mean(x)||^2
  double l0 = 0;                  // features firing per token, on average
  double dead_fraction = 0;       // features that fire on none of the tokens
  at::Tensor frequency;           // double (F): the share of the tokens each feature fires on
};
SaeQuality sae_quality(const SparseAutoencoder& sae, const at::Tensor& tokens);

// Layer `layer`'s patch tokens (0: the embeddings) of every image, (n * P, D) float
// on the CPU.
at::Tensor layer_patch_tokens(VisionTransformer& model, int64_t layer, const ImageBatches& images);

// The mean cross-entropy against `labels` (n) as is, with layer `layer`'s patch
// tokens replaced by the SAE's reconstruction (spliced), and by zeros; recovered =
// (zero_ablated - spliced) / (zero_ablated - clean).
struct SplicedLosses {
  double clean = 0, spliced = 0, zero_ablated = 0, recovered = 0;
};
SplicedLosses spliced_losses(VisionTransformer& model, const SparseAutoencoder& sae, int64_t layer,
                             const ImageBatches& images, const at::Tensor& labels);

}  // namespace vit
