// The optimizer moves every trainable parameter into one contiguous fp32 vector,
// and its gradient into another: each parameter becomes a view of its slice, and
// autograd accumulates into the gradient slices in place. The update, the gradient
// norm and the gradient scaling are then a few operators over the whole vector,
// instead of a dozen per parameter tensor (the demo model has 78), and an all-reduce
// can take the gradients in one piece.
//
// On LibTorch 2.x the learning rate is a tensor on the device that step() reads, and
// the step is ATen's fused AdamW/SGD, one kernel per group, with nothing that waits
// for the device; on 1.13, a handful of whole-vector operators.
#include "vit/train/optimizer.hpp"

#include <cmath>
#include <sstream>
#include <type_traits>
#include <unordered_map>

#include <fmt/format.h>
#include <torch/torch.h>
#include <torch/version.h>
#include <nlohmann/json.hpp>

#include "vit/error.hpp"
#include "vit/kernels/adamw.hpp"

namespace vit {
namespace {

constexpr const char* kLayoutKey = "vit_layout";  // absent in torch::optim's own state

// ATen's fused AdamW and SGD take the learning rate as a tensor and run on
// CPU and CUDA from LibTorch 2.4 on. On the CPU they are also faster than the
// whole-vector operators. (measured: docs/benchmarks.md, "Why the own kernels")
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
#define VIT_FUSED_OPTIMIZER 1
#else
#define VIT_FUSED_OPTIMIZER 0
#endif

std::string first_line(const std::string& text) {
  return text.substr(0, text.find('\n'));
}

// The key of a parameter's state in a torch::optim optimizer: its TensorImpl's
// address, printed as text before LibTorch 2.x and the pointer itself since.
template <typename TorchOptimizer>
auto torch_state_key(const TorchOptimizer& optimizer, const at::Tensor& parameter) {
  using Key = typename std::decay_t<decltype(optimizer.state())>::key_type;
  if constexpr (std::is_same_v<Key, std::string>) {
    std::ostringstream text;
    text << parameter.unsafeGetTensorImpl();
    return text.str();
  } else {
    return Key(parameter.unsafeGetTensorImpl());
  }
}

}  // namespace

Optimizer::Optimizer(std::vector<ParameterGroup> groups, const TrainConfig& train)
    : groups_(std::move(groups)),
      rule_(train.optimizer),
      beta1_(train.betas.at(0)),
      beta2_(train.betas.at(1)),
      momentum_(train.momentum) {
  lay_out_flat();
  if (rule_ == OptimizerRule::kAdamW) {
    first_moment_ = torch::zeros_like(values_);
    second_moment_ = torch::zeros_like(values_);
  } else {
    momentum_buffer_ = torch::zeros_like(values_);
  }
  step_count_ = torch::zeros({}, values_.options());
  std::vector<float> scales;
  for (const auto& group : groups_)
    scales.push_back(static_cast<float>(group.lr_scale));
  lr_scales_ = torch::tensor(scales, torch::kFloat32).to(values_.device());
  group_lrs_ = torch::zeros_like(lr_scales_);
}

void Optimizer::lay_out_flat() {
  int64_t total = 0;
  const at::Tensor* first = nullptr;
  for (const auto& group : groups_) {
    for (size_t i = 0; i < group.parameters.size(); ++i) {
      const auto& p = group.parameters[i];
      if (!first) first = &p;
      if (p.scalar_type() != at::kFloat || p.device() != first->device())
        throw Error(
            fmt::format("parameter {} is {} on {}; the optimizer needs every parameter in "
                        "fp32 on {}",
                        group.names[i], c10::toString(p.scalar_type()), p.device().str(),
                        first->device().str()));
      total += p.numel();
    }
  }
  if (!first) throw Error("the optimizer has no trainable parameters (all are frozen)");
  const auto options = first->options().requires_grad(false);
  values_ = torch::empty({total}, options);
  gradients_ = torch::zeros({total}, options);
  torch::NoGradGuard no_grad;
  int64_t offset = 0;
  for (auto& group : groups_) {
    const int64_t group_start = offset;
    for (size_t i = 0; i < group.parameters.size(); ++i) {
      auto& p = group.parameters[i];
      const int64_t n = p.numel();
      auto value = values_.narrow(0, offset, n).view(p.sizes());
      value.copy_(p);
      p.set_data(value);
      p.mutable_grad() = gradients_.narrow(0, offset, n).view(p.sizes());
      slots_.push_back({group.names[i], offset, n, p.data_ptr()});
      offset += n;
    }
    group_ranges_.emplace_back(group_start, offset - group_start);
  }
}

void Optimizer::check_parameters_in_place() const {
  size_t k = 0;
  for (const auto& group : groups_)
    for (const auto& p : group.parameters) {
      const Slot& slot = slots_[k++];
      if (p.data_ptr() != slot.data ||
          (p.grad().defined() &&
           p.grad().data_ptr() != static_cast<const float*>(gradients_.data_ptr()) + slot.offset))
        throw Error("parameter " + slot.name +
                    " was replaced after the optimizer was built; change parameters in place");
    }
}

at::Tensor Optimizer::group_slice(const at::Tensor& flat, size_t group) const {
  return flat.narrow(0, group_ranges_[group].first, group_ranges_[group].second);
}

int64_t Optimizer::offset_of(const at::Tensor& parameter) const {
  const auto* start = static_cast<const float*>(values_.data_ptr());
  const auto* p = static_cast<const float*>(parameter.data_ptr());
  if (p < start || p + parameter.numel() > start + values_.numel() || !parameter.is_contiguous())
    return -1;
  return p - start;
}

void Optimizer::zero_grad() {
  gradients_.zero_();
}

at::Tensor Optimizer::clip_gradient_norm(double max_norm) {
  torch::NoGradGuard no_grad;
  const auto norm = gradients_.norm();
  // torch's clip_grad_norm_: a coefficient clamped to 1, so gradients under
  // the limit are multiplied by exactly 1 and keep their values.
  gradients_.mul_((max_norm / (norm + 1e-6)).clamp_max(1.0));
  return norm;
}

void Optimizer::set_learning_rate(double lr) {
  lr_ = lr;
  // A kernel with the value as its argument, queued before the next step.
  if (VIT_FUSED_OPTIMIZER) group_lrs_.copy_(lr_scales_ * lr);
}

int64_t Optimizer::steps() const {
  return static_cast<int64_t>(step_count_.item<double>());
}

void Optimizer::step(const at::Tensor& skip) {
  check_parameters_in_place();
  torch::NoGradGuard no_grad;
  if (VIT_FUSED_OPTIMIZER) return fused_step(skip);
  // 1.13 builds run on the CPU only, where reading the flag waits for nothing.
  if (skip.defined() && skip.item<double>() != 0) return;
  step_count_.add_(1);
  if (rule_ == OptimizerRule::kAdamW)
    adamw_step();
  else
    sgd_step();
}

#if VIT_FUSED_OPTIMIZER
// ATen's fused kernels, one call per group over its slice of the flat
// vectors. They skip the update where their found_inf holds 1 and leave the
// step count to the caller, which takes a skipped step back off, as
// torch.optim does.
void Optimizer::fused_step(const at::Tensor& skip_flag) {
  const auto skip = skip_flag.defined() ? std::optional<at::Tensor>(skip_flag) : std::nullopt;
  step_count_.add_(1);
  for (size_t g = 0; g < groups_.size(); ++g) {
    at::Tensor values = group_slice(values_, g), grads = group_slice(gradients_, g);
    const at::Tensor lr = group_lrs_[static_cast<int64_t>(g)];
    if (rule_ == OptimizerRule::kAdamW) {
      at::Tensor first = group_slice(first_moment_, g), second = group_slice(second_moment_, g);
      at::_fused_adamw_({values}, {grads}, {first}, {second}, {}, {step_count_}, lr, beta1_, beta2_,
                        groups_[g].weight_decay, eps_, /*amsgrad=*/false,
                        /*maximize=*/false, /*grad_scale=*/std::nullopt, skip);
    } else {
      // The buffers start at zero, so the first step's momentum x 0 + gradient
      // is the gradient itself, as torch.optim.SGD starts it.
      at::Tensor momentum = group_slice(momentum_buffer_, g);
      at::_fused_sgd_({values}, {grads}, {momentum}, groups_[g].weight_decay, momentum_, lr,
                      /*dampening=*/0.0, /*nesterov=*/false, /*maximize=*/false,
                      /*is_first_step=*/false, /*grad_scale=*/std::nullopt, skip);
    }
  }
  if (skip) step_count_.sub_(skip->squeeze(0));  // float (1) -> 0-dim
}
#else
void Optimizer::fused_step(const at::Tensor&) {}
#endif

// torch.optim.AdamW (amsgrad off): on CPUs with AVX2 or AVX-512, one pass
// per group (kernels/adamw); elsewhere with the moments updated for all
// groups at once and only the decay and the update itself per group.
void Optimizer::adamw_step() {
  const double t = step_count_.item<double>();
  if (adamw_uses_own_kernel(values_, gradients_, first_moment_, second_moment_)) {
    for (size_t g = 0; g < groups_.size(); ++g)
      adamw_update(group_slice(values_, g), group_slice(gradients_, g),
                   group_slice(first_moment_, g), group_slice(second_moment_, g),
                   {lr_ * groups_[g].lr_scale, groups_[g].weight_decay, beta1_, beta2_, eps_, t});
    return;
  }
  const double correction1 = 1.0 - std::pow(beta1_, t);
  const double correction2 = 1.0 - std::pow(beta2_, t);
  first_moment_.mul_(beta1_).add_(gradients_, 1.0 - beta1_);
  second_moment_.mul_(beta2_).addcmul_(gradients_, gradients_, 1.0 - beta2_);
  // Scratch for the operators' path only, made at its first step.
  if (!denominator_.defined()) denominator_ = torch::empty_like(values_);
  at::sqrt_out(denominator_, second_moment_).div_(std::sqrt(correction2)).add_(eps_);
  for (size_t g = 0; g < groups_.size(); ++g) {
    const double group_lr = lr_ * groups_[g].lr_scale;
    auto values = group_slice(values_, g);
    if (groups_[g].weight_decay != 0) values.mul_(1.0 - group_lr * groups_[g].weight_decay);
    values.addcdiv_(group_slice(first_moment_, g), group_slice(denominator_, g),
                    -group_lr / correction1);
  }
}

// torch.optim.SGD (no dampening, no Nesterov): weight decay adds to the
// gradient; the buffer starts at zero, so the first step's momentum is the
// gradient itself.
void Optimizer::sgd_step() {
  for (size_t g = 0; g < groups_.size(); ++g)
    if (groups_[g].weight_decay != 0)
      group_slice(gradients_, g).add_(group_slice(values_, g), groups_[g].weight_decay);
  momentum_buffer_.mul_(momentum_).add_(gradients_);
  for (size_t g = 0; g < groups_.size(); ++g)
    group_slice(values_, g).add_(group_slice(momentum_buffer_, g), -lr_ * groups_[g].lr_scale);
}

void Optimizer::save(torch::serialize::OutputArchive& archive) const {
  nlohmann::json layout = {{"rule", enum_name(rule_)}, {"steps", steps()}};
  for (const auto& slot : slots_)
    layout["parameters"].push_back({slot.name, slot.numel});
  archive.write(kLayoutKey, c10::IValue(layout.dump()));
  const auto write = [&](const char* key, const at::Tensor& t) { archive.write(key, t.cpu()); };
  if (rule_ == OptimizerRule::kAdamW) {
    write("first_moment", first_moment_);
    write("second_moment", second_moment_);
  } else {
    write("momentum", momentum_buffer_);
  }
}

void Optimizer::load(torch::serialize::InputArchive& archive, const std::string& source) {
  c10::IValue layout_text;
  if (!archive.try_read(kLayoutKey, layout_text)) return load_legacy(archive, source);
  if (!layout_text.isString()) throw Error(source + ": damaged optimizer state (layout)");
  nlohmann::json layout;
  try {
    layout = nlohmann::json::parse(layout_text.toStringRef());
    const auto saved_rule = layout.at("rule").get<std::string>();
    if (enum_from_name<OptimizerRule>(saved_rule) != rule_)
      throw Error(fmt::format("{}: the optimizer state is {}'s, but train.optimizer is {}", source,
                              saved_rule, enum_name(rule_)));
    // Where each saved parameter's state starts, by name.
    std::unordered_map<std::string, std::pair<int64_t, int64_t>> saved;
    int64_t offset = 0;
    for (const auto& entry : layout.at("parameters")) {
      const auto numel = entry.at(1).get<int64_t>();
      saved[entry.at(0).get<std::string>()] = {offset, numel};
      offset += numel;
    }
    const auto read_into = [&](const char* key, at::Tensor& flat) {
      at::Tensor stored;
      archive.read(key, stored);
      if (stored.dim() != 1 || stored.numel() != offset)
        throw Error(fmt::format("{}: damaged optimizer state ('{}' has {} values, the layout {})",
                                source, key, stored.numel(), offset));
      for (const auto& slot : slots_) {
        const auto found = saved.find(slot.name);
        if (found == saved.end())
          throw Error(source + ": the optimizer state has no entry for parameter " + slot.name);
        if (found->second.second != slot.numel)
          throw Error(fmt::format("{}: the optimizer state of {} has {} values, the parameter {}",
                                  source, slot.name, found->second.second, slot.numel));
        flat.narrow(0, slot.offset, slot.numel)
            .copy_(stored.narrow(0, found->second.first, slot.numel));
      }
    };
    if (rule_ == OptimizerRule::kAdamW) {
      read_into("first_moment", first_moment_);
      read_into("second_moment", second_moment_);
    } else {
      read_into("momentum", momentum_buffer_);
    }
    step_count_.fill_(static_cast<double>(layout.at("steps").get<int64_t>()));
  } catch (const nlohmann::json::exception& e) {
    throw Error(source + ": damaged optimizer state (" + e.what() + ")");
  } catch (const c10::Error& e) {
    throw Error(source + ": damaged optimizer state (" + first_line(e.what_without_backtrace()) +
                ")");
  }
}

// Checkpoints written before the flat optimizer hold torch::optim's state of
// the same groups, keyed by each parameter's position. LibTorch's own reader
// maps it onto our parameters; the moments are then copied into the slices.
void Optimizer::load_legacy(torch::serialize::InputArchive& archive, const std::string& source) {
  std::vector<torch::optim::OptimizerParamGroup> torch_groups;
  for (const auto& group : groups_)
    torch_groups.emplace_back(group.parameters);
  const auto copy_state = [&](auto& legacy, auto&& copy_one) {
    legacy.load(archive);
    size_t k = 0;
    for (const auto& group : groups_)
      for (const auto& p : group.parameters) {
        const Slot& slot = slots_[k++];
        const auto found = legacy.state().find(torch_state_key(legacy, p));
        if (found != legacy.state().end()) copy_one(*found->second, slot);
      }
  };
  torch::NoGradGuard no_grad;
  try {
    if (rule_ == OptimizerRule::kAdamW) {
      torch::optim::AdamW legacy(torch_groups, torch::optim::AdamWOptions(1.0));
      copy_state(legacy, [&](torch::optim::OptimizerParamState& state, const Slot& slot) {
        const auto& adam = static_cast<const torch::optim::AdamWParamState&>(state);
        first_moment_.narrow(0, slot.offset, slot.numel).copy_(adam.exp_avg().reshape(-1));
        second_moment_.narrow(0, slot.offset, slot.numel).copy_(adam.exp_avg_sq().reshape(-1));
        step_count_.fill_(static_cast<double>(adam.step()));
      });
    } else {
      torch::optim::SGD legacy(torch_groups, torch::optim::SGDOptions(1.0).momentum(momentum_));
      copy_state(legacy, [&](torch::optim::OptimizerParamState& state, const Slot& slot) {
        const auto& sgd = static_cast<const torch::optim::SGDParamState&>(state);
        momentum_buffer_.narrow(0, slot.offset, slot.numel)
            .copy_(sgd.momentum_buffer().reshape(-1));
        step_count_.fill_(1.0);  // the buffer has started
      });
    }
  } catch (const c10::Error& e) {
    throw Error(source + ": damaged optimizer state (" + first_line(e.what_without_backtrace()) +
                ")");
  }
}

std::unique_ptr<Optimizer> make_optimizer(VisionTransformer& model, const TrainConfig& train) {
  return std::make_unique<Optimizer>(parameter_groups(model, train), train);
}

}  // namespace vit
