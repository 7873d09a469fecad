#pragma once
// AdamW (as torch.optim.AdamW) or SGD with momentum (as torch.optim.SGD), over flat
// buffers: every trainable parameter becomes a view of one contiguous fp32 vector,
// and its gradient of another. Once the optimizer is built, parameters must keep
// their storage: change values in place (copy_), never by assignment or set_data;
// a step throws if a parameter was replaced.
#include <memory>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

#include "vit/config.hpp"
#include "vit/model/vision_transformer.hpp"
#include "vit/train/parameter_groups.hpp"

namespace torch::serialize {
class InputArchive;
class OutputArchive;
}  // namespace torch::serialize

namespace vit {

class Optimizer {
 public:
  // train.optimizer picks the rule. All parameters must be fp32 on one device.
  Optimizer(std::vector<ParameterGroup> groups, const TrainConfig& train);

  void zero_grad();
  // All gradients, one fp32 vector, group after group.
  at::Tensor& gradients() { return gradients_; }
  // All parameters, laid out as gradients(); each parameter is a view of it.
  const at::Tensor& values() const { return values_; }
  // -1 when `parameter` is not a view of values() (a frozen one).
  int64_t offset_of(const at::Tensor& parameter) const;
  // Scales the gradients down to a global L2 norm of max_norm, as clip_grad_norm_.
  // Returns the norm before clipping, 0-dim on the device, without waiting.
  at::Tensor clip_gradient_norm(double max_norm);
  // The rate of the following steps (times each group's lr_scale); a step captured
  // in a CUDA graph takes the rate set before each replay.
  void set_learning_rate(double lr);
  // One update at the rate last set, skipped where `skip` (float (1) on the device,
  // e.g. LossScaler's flag) holds 1. On LibTorch 2.x it never waits for the device.
  void step(const at::Tensor& skip = {});
  void step(double lr) {
    set_learning_rate(lr);
    step();
  }

  int64_t steps() const;  // updates made (waits for the device)
  const std::vector<ParameterGroup>& groups() const { return groups_; }

  // The state (moments or momentum, and the step count) by parameter name, so a
  // run can resume with its groups laid out differently.
  void save(torch::serialize::OutputArchive& archive) const;
  // Throws vit::Error naming `source` if the state does not fit the model. Also
  // reads older checkpoints' torch::optim::AdamW/SGD state.
  void load(torch::serialize::InputArchive& archive, const std::string& source);

 private:
  struct Slot {  // where one parameter lives in the flat buffers
    std::string name;
    int64_t offset;
    int64_t numel;
    const void* data;  // the parameter's data pointer, to detect replacement
  };
  void lay_out_flat();
  void check_parameters_in_place() const;
  void fused_step(const at::Tensor& skip);
  void adamw_step();
  void sgd_step();
  at::Tensor group_slice(const at::Tensor& flat, size_t group) const;
  void load_legacy(torch::serialize::InputArchive& archive, const std::string& source);

  std::vector<ParameterGroup> groups_;
  OptimizerRule rule_;
  double beta1_, beta2_, momentum_;
  double eps_ = 1e-8;
  std::vector<Slot> slots_;
  std::vector<std::pair<int64_t, int64_t>> group_ranges_;  // (offset, numel) per group
  at::Tensor values_, gradients_;
  at::Tensor first_moment_, second_moment_, denominator_;  // AdamW
  at::Tensor momentum_buffer_;                             // SGD
  // Updates made: float 0-dim on the device, as the fused kernels read it.
  at::Tensor step_count_;
  double lr_ = 0;         // the rate last set
  at::Tensor lr_scales_;  // float (groups) on the device: each group's lr_scale
  at::Tensor group_lrs_;  // float (groups) on the device: lr x lr_scale (2.x)
};

// The optimizer of train.optimizer over parameter_groups(model, train).
std::unique_ptr<Optimizer> make_optimizer(VisionTransformer& model, const TrainConfig& train);

}  // namespace vit
