// The average is one fp32 flat vector laid out as the optimizer's: one operator a
// step. Its model holds views of that vector for the trained parameters; the frozen
// ones never change, so their average is themselves.
#include "vit/train/model_ema.hpp"

#include <cmath>

#include <torch/torch.h>

#include "vit/error.hpp"

namespace vit {

double ema_decay(const ModelEmaConfig& config, int64_t step) {
  const int64_t t = std::max<int64_t>(0, step - 1);
  if (t <= 0) return 0.0;
  if (!config.warmup) return config.decay;
  // timm's warmup_gamma 1 and warmup_power 2/3; min_decay 0.
  const double warm = 1.0 - std::pow(1.0 + double(t), -2.0 / 3.0);
  return std::max(std::min(warm, config.decay), 0.0);
}

ModelEma::ModelEma(const VisionTransformer& model, const Optimizer& optimizer,
                   ModelEmaConfig config)
    : optimizer_(optimizer), live_(model), config_(config), values_(optimizer.values().clone()) {
  const auto device = optimizer.values().device();
  average_ = VisionTransformer(model->config());
  average_->to(device);
  average_->eval();
  torch::NoGradGuard no_grad;
  const auto from = model->named_parameters();
  for (auto& p : average_->named_parameters()) {
    const auto& live = from[p.key()];
    p.value().requires_grad_(false);
    const int64_t offset = optimizer.offset_of(live);
    if (offset < 0) {
      p.value().copy_(live);  // frozen: its own average
      continue;
    }
    p.value().set_data(values_.narrow(0, offset, live.numel()).view(live.sizes()));
  }
  const auto buffers = model->named_buffers();
  for (auto& b : average_->named_buffers())
    b.value().copy_(buffers[b.key()]);
}

void ModelEma::update(int64_t step) {
  torch::NoGradGuard no_grad;
  values_.lerp_(optimizer_.values(), 1.0 - ema_decay(config_, step));
}

void ModelEma::restart_from_weights() {
  torch::NoGradGuard no_grad;
  values_.copy_(optimizer_.values());
  const auto from = live_->named_parameters();
  for (auto& p : average_->named_parameters())
    if (optimizer_.offset_of(from[p.key()]) < 0) p.value().copy_(from[p.key()]);
}

void ModelEma::save(torch::serialize::OutputArchive& archive) const {
  average_->save(archive);
}

void ModelEma::load(torch::serialize::InputArchive& archive, const std::string& source) {
  VisionTransformer stored(average_->config());
  try {
    stored->load(archive);
  } catch (const std::exception& e) {
    throw Error(source + ": the weights' average does not fit the model (" + first_line_of(e) +
                ")");
  }
  torch::NoGradGuard no_grad;
  const auto from = stored->named_parameters();
  for (auto& p : average_->named_parameters())
    p.value().copy_(from[p.key()]);  // in place: the trained ones are views of values_
}

}  // namespace vit
