// The recompute runs on the same low-precision weight copies
// (model/weight_substitution) and with the same dropout, attention dropout and
// drop-path draws. The block's output is a whole tensor, so the fusion of its last
// residual add with the next block's norm1 (model/residual.hpp) does not cross a
// checkpointed block's edge: the add runs inside the block, the norm in the next.
// Everything within the block runs the same kernels as without checkpointing.
#include "vit/model/block_checkpoint.hpp"

#include <mutex>
#include <optional>
#include <utility>

#include <ATen/Context.h>
#include <torch/autograd.h>
#include <torch/custom_class.h>

#include "vit/autocast_state.hpp"
#include "vit/model/weight_substitution.hpp"

namespace vit {
namespace {

// What the recompute must see as the forward pass saw it.
struct ForwardState : torch::CustomClassHolder {
  BlockImpl* block = nullptr;
  QueryRows rows = QueryRows::kAll;
  bool cpu_autocast = false, cuda_autocast = false;
  at::ScalarType cpu_dtype = at::kBFloat16, cuda_dtype = at::kHalf;
  const WeightMap* substitutes = nullptr;
  c10::Device device = c10::kCPU;
  at::Tensor rng_state;  // the device's generator before the block; undefined: it draws nothing
};

bool draws_random_numbers(const BlockImpl& block) {
  if (!block.is_training()) return false;
  const auto p = [](const torch::nn::Dropout& d) { return d->options.p() > 0; };
  return block.drop_path_rate > 0 || p(block.mlp->drop) || p(block.attn->attn_drop) ||
         p(block.attn->proj_drop);
}

at::Generator generator_of(c10::Device device) {
  return at::globalContext().defaultGenerator(device);
}

// The forward pass's autocast, weight copies and generator state, for the
// recompute's duration; then the backward pass's own again.
class ForwardReplay {
 public:
  explicit ForwardReplay(const ForwardState& s)
      : cpu_was_(autocast_is_on(c10::DeviceType::CPU)),
        cuda_was_(autocast_is_on(c10::DeviceType::CUDA)),
        cpu_dtype_was_(autocast_dtype_on(c10::DeviceType::CPU)),
        cuda_dtype_was_(autocast_dtype_on(c10::DeviceType::CUDA)),
        device_(s.device) {
    set_autocast(c10::DeviceType::CPU, s.cpu_autocast, s.cpu_dtype);
    set_autocast(c10::DeviceType::CUDA, s.cuda_autocast, s.cuda_dtype);
    if (s.substitutes) substitution_.emplace(*s.substitutes);
    if (s.rng_state.defined()) {
      auto generator = generator_of(device_);
      std::lock_guard<std::mutex> lock(generator.mutex());
      backward_rng_ = generator.get_state();
      generator.set_state(s.rng_state);
    }
  }
  ~ForwardReplay() {
    if (backward_rng_.defined()) {
      auto generator = generator_of(device_);
      std::lock_guard<std::mutex> lock(generator.mutex());
      generator.set_state(backward_rng_);
    }
    set_autocast(c10::DeviceType::CPU, cpu_was_, cpu_dtype_was_);
    set_autocast(c10::DeviceType::CUDA, cuda_was_, cuda_dtype_was_);
    at::autocast::clear_cache();  // the recompute's casts of the weights
  }
  ForwardReplay(const ForwardReplay&) = delete;
  ForwardReplay& operator=(const ForwardReplay&) = delete;

 private:
  bool cpu_was_, cuda_was_;
  at::ScalarType cpu_dtype_was_, cuda_dtype_was_;
  c10::Device device_;
  std::optional<WeightSubstitution> substitution_;
  at::Tensor backward_rng_;
};

torch::Tensor block_output(BlockImpl& block, const torch::Tensor& x, QueryRows rows) {
  return block.run(Residual(x), {}, {}, rows).out.tensor();
}

class CheckpointedBlock : public torch::autograd::Function<CheckpointedBlock> {
 public:
  // Runs with gradients off (Function::apply): nothing inside is kept.
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, torch::Tensor x,
                               c10::intrusive_ptr<ForwardState> state) {
    ctx->save_for_backward({x});
    ctx->saved_data["state"] = c10::IValue::make_capsule(state);
    return block_output(*state->block, x, state->rows);
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const auto state =
        c10::static_intrusive_pointer_cast<ForwardState>(ctx->saved_data["state"].toCapsule());
    auto x = ctx->get_saved_variables()[0].detach().requires_grad_(true);
    torch::Tensor out;
    {
      ForwardReplay replay(*state);
      torch::AutoGradMode with_gradients(true);
      out = block_output(*state->block, x, state->rows);
    }
    // The parameters' gradients accumulate where the forward pass's would have.
    torch::autograd::backward({out}, {grads[0]});
    return {x.grad(), torch::Tensor()};
  }
};

}  // namespace

torch::Tensor run_checkpointed(BlockImpl& block, const torch::Tensor& x, QueryRows rows) {
  if (!torch::GradMode::is_enabled()) return block_output(block, x, rows);
  auto state = c10::make_intrusive<ForwardState>();
  state->block = &block;
  state->rows = rows;
  state->cpu_autocast = autocast_is_on(c10::DeviceType::CPU);
  state->cuda_autocast = autocast_is_on(c10::DeviceType::CUDA);
  state->cpu_dtype = autocast_dtype_on(c10::DeviceType::CPU);
  state->cuda_dtype = autocast_dtype_on(c10::DeviceType::CUDA);
  state->substitutes = active_weight_substitutes();
  state->device = x.device();
  if (draws_random_numbers(block)) {
    auto generator = generator_of(state->device);
    std::lock_guard<std::mutex> lock(generator.mutex());
    state->rng_state = generator.get_state();
  }
  // The input must take part in autograd for the block's parameters to get
  // their gradients (frozen embeddings give an input without them).
  const auto input = x.requires_grad() ? x : x.detach().requires_grad_(true);
  return CheckpointedBlock::apply(input, state);
}

}  // namespace vit
