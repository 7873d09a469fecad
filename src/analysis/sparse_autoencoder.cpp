// Shape key: n tokens, D width, F features, B images, N tokens a image, P patches, K classes.
#include "vit/analysis/sparse_autoencoder.hpp"

#include <algorithm>
#include <numeric>
#include <random>

#include <torch/torch.h>

#include "vit/analysis/residual_stream.hpp"
#include "vit/error.hpp"

namespace vit {
namespace {

constexpr int64_t kChunk = 8192;                // tokens a pass, where no gradient is needed
constexpr int64_t kResampleCandidates = 8192;   // tokens whose residuals resampling chooses from
constexpr double kResampledEncoderScale = 0.2;  // of the live encoder columns' mean norm

void check_tokens(const SparseAutoencoder& sae, const at::Tensor& tokens, const char* where) {
  if (tokens.dim() != 2 || tokens.size(0) < 1 || tokens.size(1) != sae.width())
    throw Error(std::string(where) + ": tokens of shape " + c10::str(tokens.sizes()) +
                ", expected (n, " + std::to_string(sae.width()) + ") with n >= 1");
}

void normalize_decoder_rows(SparseAutoencoder& sae) {
  torch::NoGradGuard no_grad;
  sae.W_dec.div_(sae.W_dec.norm(2, /*dim=*/{1}, /*keepdim=*/true).clamp_min(1e-12));
}

std::vector<int64_t> shuffled(int64_t n, std::mt19937_64& engine) {
  std::vector<int64_t> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), engine);
  return order;
}

// Each dead feature points along the residual of one of the worst
// reconstructed tokens among a random sample.
void resample(SparseAutoencoder& sae, const at::Tensor& tokens, const at::Tensor& dead,
              std::mt19937_64& engine) {
  torch::NoGradGuard no_grad;
  const auto order = shuffled(tokens.size(0), engine);
  const int64_t count = std::min<int64_t>(kResampleCandidates, tokens.size(0));
  const auto picked =
      torch::tensor(std::vector<int64_t>(order.begin(), order.begin() + count), torch::kLong)
          .to(tokens.device());
  const auto x = tokens.index_select(0, picked);
  const auto residual = x - sae.decode(sae.encode(x));                   // (c, D)
  const auto worst = std::get<1>(residual.pow(2).sum(1).sort(0, true));  // (c)
  const auto features = dead.nonzero().squeeze(1);                       // (d)
  const auto rows = worst.index({torch::arange(features.size(0), worst.options()) % count});
  const auto directions = residual.index_select(0, rows);
  const auto unit = directions / directions.norm(2, {1}, true).clamp_min(1e-12);  // (d, D)
  const auto alive = dead.logical_not();
  const double scale =
      kResampledEncoderScale *
      (alive.any().item<bool>()
           ? sae.W_enc.index({torch::indexing::Slice(), alive}).norm(2, {0}).mean().item<double>()
           : 1.0);
  sae.W_dec.index_copy_(0, features, unit);
  sae.W_enc.index_copy_(1, features, (unit * scale).t());
  sae.b_enc.index_fill_(0, features, 0.0);
}

double cross_entropy_sum(const at::Tensor& logits, const at::Tensor& labels) {
  return torch::nn::functional::cross_entropy(
             logits.to(torch::kDouble), labels,
             torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kSum))
      .item<double>();
}

}  // namespace

SparseAutoencoder SparseAutoencoder::random(int64_t width, int64_t features, int64_t k,
                                            uint64_t seed) {
  if (width < 1 || features < 1 || k < 0 || k > features)
    throw Error("sparse autoencoder: width " + std::to_string(width) + ", " +
                std::to_string(features) + " features, k " + std::to_string(k) +
                "; expected width and features >= 1 and 0 <= k <= features");
  torch::manual_seed(seed);
  SparseAutoencoder sae;
  sae.k = k;
  sae.W_dec = torch::randn({features, width});
  normalize_decoder_rows(sae);
  sae.W_enc = sae.W_dec.t().contiguous();
  sae.b_enc = torch::zeros({features});
  sae.b_dec = torch::zeros({width});
  return sae;
}

at::Tensor SparseAutoencoder::encode(const at::Tensor& x) const {
  const auto pre = torch::addmm(b_enc, x - b_dec, W_enc);  // (n, F)
  if (k == 0) return torch::relu(pre);
  const auto [values, indices] = pre.topk(k, /*dim=*/1);
  return torch::zeros_like(pre).scatter(1, indices, torch::relu(values));
}

at::Tensor SparseAutoencoder::decode(const at::Tensor& z) const {
  return torch::addmm(b_dec, z, W_dec);  // (n, D)
}

// A dead feature's decoder row and encoder column are set along the worst
// reconstructed tokens' residuals, its encoder bias to 0. Plain SGD's step size,
// unlike Adam's first steps, follows the gradient's scale.
SaeTrainingReport train_sae(SparseAutoencoder& sae, const at::Tensor& tokens,
                            const SaeTraining& training) {
  check_tokens(sae, tokens, "sparse autoencoder training");
  const auto x_all = tokens.to(torch::kFloat);
  const auto device = x_all.device();
  for (auto* t : {&sae.W_enc, &sae.b_enc, &sae.W_dec, &sae.b_dec})
    *t = t->detach().to(device).requires_grad_(true);
  if (training.centre_decoder_bias) {
    torch::NoGradGuard no_grad;
    sae.b_dec.copy_(x_all.mean(0));
  }
  const auto fresh_optimizer = [&]() -> std::unique_ptr<torch::optim::Optimizer> {
    std::vector<at::Tensor> parameters{sae.W_enc, sae.b_enc, sae.W_dec, sae.b_dec};
    if (training.optimizer == SaeOptimizer::kSgd)
      return std::make_unique<torch::optim::SGD>(parameters, torch::optim::SGDOptions(training.lr));
    return std::make_unique<torch::optim::Adam>(parameters, torch::optim::AdamOptions(training.lr));
  };
  auto optimizer = fresh_optimizer();
  std::mt19937_64 engine(training.seed);
  const int64_t n = x_all.size(0), batch = std::max<int64_t>(1, training.batch);
  SaeTrainingReport report;
  for (int64_t epoch = 0; epoch < training.epochs; ++epoch) {
    const auto order = torch::tensor(shuffled(n, engine), torch::kLong).to(device);
    auto fired = torch::zeros({sae.features()}, torch::TensorOptions(device).dtype(torch::kLong));
    double loss_sum = 0;
    for (int64_t first = 0; first < n; first += batch) {
      const auto x = x_all.index_select(0, order.slice(0, first, std::min(n, first + batch)));
      const auto z = sae.encode(x);
      const auto loss = (x - sae.decode(z)).pow(2).sum(1).mean() + training.l1 * z.sum(1).mean();
      {
        torch::NoGradGuard no_grad;
        fired += z.gt(0).sum(0);
      }
      optimizer->zero_grad();
      loss.backward();
      optimizer->step();
      normalize_decoder_rows(sae);
      loss_sum += loss.item<double>() * static_cast<double>(x.size(0));
      ++report.steps;
    }
    report.epoch_losses.push_back(loss_sum / static_cast<double>(n));
    const auto dead = fired.eq(0);
    const int64_t count = dead.sum().item<int64_t>();
    const bool resampling = training.resample_dead && count > 0 && epoch + 1 < training.epochs;
    if (resampling) {
      resample(sae, x_all, dead, engine);
      optimizer = fresh_optimizer();  // moments of the old directions would steer the new ones
      report.resampled += count;
    }
    report.epoch_resampled.push_back(resampling ? count : 0);
  }
  for (auto* t : {&sae.W_enc, &sae.b_enc, &sae.W_dec, &sae.b_dec})
    *t = t->detach();
  return report;
}

SaeQuality sae_quality(const SparseAutoencoder& sae, const at::Tensor& tokens) {
  check_tokens(sae, tokens, "sparse autoencoder quality");
  torch::NoGradGuard no_grad;
  const auto x_all = tokens.to(torch::kFloat);
  const auto mean = x_all.mean(0);
  double error = 0, spread = 0, firing = 0;
  auto fired =
      torch::zeros({sae.features()}, torch::TensorOptions(x_all.device()).dtype(torch::kLong));
  for (int64_t first = 0; first < x_all.size(0); first += kChunk) {
    const auto x = x_all.slice(0, first, std::min(x_all.size(0), first + kChunk));
    const auto z = sae.encode(x);
    error += (x - sae.decode(z)).pow(2).sum().item<double>();
    spread += (x - mean).pow(2).sum().item<double>();
    const auto active = z.gt(0);
    firing += active.sum().item<double>();
    fired += active.sum(0);
  }
  SaeQuality q;
  q.explained_variance = spread > 0 ? 1.0 - error / spread : 0.0;
  q.l0 = firing / static_cast<double>(x_all.size(0));
  q.frequency = fired.cpu().to(torch::kDouble) / static_cast<double>(x_all.size(0));
  q.dead_fraction = fired.eq(0).to(torch::kDouble).mean().item<double>();
  return q;
}

at::Tensor layer_patch_tokens(VisionTransformer& model, int64_t layer, const ImageBatches& images) {
  const auto& cfg = model->config();
  if (layer < 0 || layer > cfg.depth)
    throw Error("sparse autoencoder: layer " + std::to_string(layer) + ", expected 0.." +
                std::to_string(cfg.depth));
  std::vector<at::Tensor> parts;
  images.for_each([&](int64_t, const at::Tensor& inputs) {
    const auto stream = residual_stream(model, inputs);
    parts.push_back(model->patch_tokens(stream.layers[static_cast<size_t>(layer)])
                        .reshape({-1, cfg.dim})
                        .to(torch::kCPU, torch::kFloat));
  });
  return torch::cat(parts);  // (n * P, D)
}

SplicedLosses spliced_losses(VisionTransformer& model, const SparseAutoencoder& sae, int64_t layer,
                             const ImageBatches& images, const at::Tensor& labels) {
  const auto& cfg = model->config();
  if (layer < 0 || layer > cfg.depth)
    throw Error("sparse autoencoder: layer " + std::to_string(layer) + ", expected 0.." +
                std::to_string(cfg.depth));
  if (labels.dim() != 1 || labels.size(0) != images.count)
    throw Error("sparse autoencoder: labels of shape " + c10::str(labels.sizes()) + " for " +
                std::to_string(images.count) + " images");
  torch::NoGradGuard no_grad;
  SplicedLosses sums;
  images.for_each([&](int64_t first, const at::Tensor& inputs) {
    const auto stream = residual_stream(model, inputs);
    const auto y = labels.slice(0, first, first + inputs.size(0)).to(inputs.device());
    const auto& at_layer = stream.layers[static_cast<size_t>(layer)];  // (B, N, D)
    const auto prefix = at_layer.slice(1, 0, cfg.prefix_tokens());
    const auto patches = model->patch_tokens(at_layer);  // (B, P, D)
    const auto reconstructed =
        sae.decode(sae.encode(patches.reshape({-1, cfg.dim}).to(sae.W_enc.device())))
            .to(patches.device())
            .view(patches.sizes());
    sums.clean += cross_entropy_sum(model->stream_logits(stream.layers.back()), y);
    sums.spliced += cross_entropy_sum(
        logits_from_layer(model, torch::cat({prefix, reconstructed}, 1), layer), y);
    sums.zero_ablated += cross_entropy_sum(
        logits_from_layer(model, torch::cat({prefix, torch::zeros_like(patches)}, 1), layer), y);
  });
  const double n = static_cast<double>(images.count);
  SplicedLosses mean{sums.clean / n, sums.spliced / n, sums.zero_ablated / n, 0.0};
  const double room = mean.zero_ablated - mean.clean;
  mean.recovered = room != 0 ? (mean.zero_ablated - mean.spliced) / room : 0.0;
  return mean;
}

}  // namespace vit
