#include "vit/train/optimizer.hpp"

#include <torch/torch.h>

namespace vit {

bool decays(const std::string& name, const torch::Tensor& parameter) {
  return parameter.dim() >= 2 && name != "cls_token" && name != "pos_embed";
}

std::unique_ptr<torch::optim::Optimizer> make_optimizer(VisionTransformer& model,
                                                        const TrainConfig& train) {
  std::vector<torch::Tensor> decayed, plain;
  for (const auto& p : model->named_parameters())
    (decays(p.key(), p.value()) ? decayed : plain).push_back(p.value());
  if (train.optimizer == "sgd") {
    const auto options = [&](double wd) {
      return std::make_unique<torch::optim::SGDOptions>(
          torch::optim::SGDOptions(train.lr).momentum(train.momentum).weight_decay(wd));
    };
    return std::make_unique<torch::optim::SGD>(
        std::vector<torch::optim::OptimizerParamGroup>{{decayed, options(train.weight_decay)},
                                                       {plain, options(0.0)}},
        torch::optim::SGDOptions(train.lr));
  }
  const auto options = [&](double wd) {
    return std::make_unique<torch::optim::AdamWOptions>(torch::optim::AdamWOptions(train.lr)
                                                            .betas({train.betas[0], train.betas[1]})
                                                            .weight_decay(wd));
  };
  return std::make_unique<torch::optim::AdamW>(
      std::vector<torch::optim::OptimizerParamGroup>{{decayed, options(train.weight_decay)},
                                                     {plain, options(0.0)}},
      torch::optim::AdamWOptions(train.lr));
}

void set_learning_rate(torch::optim::Optimizer& optimizer, double lr) {
  for (auto& group : optimizer.param_groups())
    group.options().set_lr(lr);
}

}  // namespace vit
