// The flat-buffer optimizer against torch::optim's AdamW and SGD: the same
// updates, the state saved and restored by name, the state of checkpoints
// written by torch::optim, and misuse refused.
#include <sstream>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "error_of.hpp"
#include "synthetic.hpp"
#include "vit/train/optimizer.hpp"

namespace vit {
namespace {

void copy_weights(VisionTransformer& from, VisionTransformer& to) {
  torch::NoGradGuard no_grad;
  const auto source = from->named_parameters();
  for (auto& p : to->named_parameters())
    p.value().copy_(source[p.key()]);
}

void copy_gradients(VisionTransformer& from, VisionTransformer& to) {
  const auto source = from->named_parameters();
  for (auto& p : to->named_parameters())
    p.value().mutable_grad() = source[p.key()].grad().clone();
}

// Two models with the same weights.
std::pair<VisionTransformer, VisionTransformer> twin_models() {
  const auto config = testing::texture_config().model;
  torch::manual_seed(3);
  VisionTransformer a(config), b(config);
  copy_weights(a, b);
  return {a, b};
}

// The bytes of an optimizer's saved state (ours or torch::optim's).
template <typename AnyOptimizer>
std::stringstream saved_state(const AnyOptimizer& optimizer) {
  torch::serialize::OutputArchive archive;
  optimizer.save(archive);
  std::stringstream bytes;
  archive.save_to(bytes);
  return bytes;
}

// A real backward pass on a fixed batch, so every parameter gets a gradient.
void backward_on(VisionTransformer& model, int64_t seed) {
  torch::manual_seed(seed);
  const auto x = torch::randn({4, 1, 8, 8});
  const auto y = torch::randint(0, 4, {4});
  torch::nn::functional::cross_entropy(model->forward(x), y).backward();
}

TrainConfig recipe(const std::string& rule) {
  TrainConfig t;
  t.optimizer = enum_named<OptimizerRule>(rule, "train.optimizer");
  t.weight_decay = 0.1;
  t.betas = {0.8, 0.95};
  t.momentum = 0.7;
  return t;
}

// torch::optim's optimizer over the same two groups as parameter_groups.
std::unique_ptr<torch::optim::Optimizer> torch_optimizer(VisionTransformer& model,
                                                         const TrainConfig& t) {
  std::vector<torch::optim::OptimizerParamGroup> groups;
  for (const auto& g : parameter_groups(model, t)) {
    if (t.optimizer == OptimizerRule::kSgd)
      groups.emplace_back(
          g.parameters,
          std::make_unique<torch::optim::SGDOptions>(
              torch::optim::SGDOptions(1.0).momentum(t.momentum).weight_decay(g.weight_decay)));
    else
      groups.emplace_back(g.parameters, std::make_unique<torch::optim::AdamWOptions>(
                                            torch::optim::AdamWOptions(1.0)
                                                .betas({t.betas[0], t.betas[1]})
                                                .weight_decay(g.weight_decay)));
  }
  if (t.optimizer == OptimizerRule::kSgd)
    return std::make_unique<torch::optim::SGD>(std::move(groups), torch::optim::SGDOptions(1.0));
  return std::make_unique<torch::optim::AdamW>(std::move(groups), torch::optim::AdamWOptions(1.0));
}

void set_torch_lr(torch::optim::Optimizer& optimizer, double lr) {
  for (auto& group : optimizer.param_groups())
    group.options().set_lr(lr);
}

double max_difference(VisionTransformer& a, VisionTransformer& b) {
  double worst = 0;
  const auto other = b->named_parameters();
  for (const auto& p : a->named_parameters())
    worst = std::max(worst, (p.value() - other[p.key()]).abs().max().item<double>());
  return worst;
}

// Three steps with a changing learning rate, from the same weights and batches.
void expect_same_updates_as_torch(const std::string& rule) {
  auto [ours, theirs] = twin_models();
  const TrainConfig t = recipe(rule);
  auto flat = make_optimizer(ours, t);
  auto reference = torch_optimizer(theirs, t);
  const double lrs[] = {1e-2, 3e-3, 5e-2};
  for (int step = 0; step < 3; ++step) {
    flat->zero_grad();
    backward_on(ours, step);
    // The same gradients for both, so the comparison is of the updates alone:
    // some gradients are rounding noise (the key bias's, which softmax
    // ignores), and Adam scales noise up to full-size steps, so weights one
    // rounding apart would otherwise drift apart through their gradients.
    copy_gradients(ours, theirs);
    flat->step(lrs[step]);
    set_torch_lr(*reference, lrs[step]);
    reference->step();
  }
  EXPECT_EQ(flat->steps(), 3);
  EXPECT_LT(max_difference(ours, theirs), 1e-6) << rule;
  // The weights moved by far more than that.
  auto [untouched, unused] = twin_models();
  EXPECT_GT(max_difference(ours, untouched), 1e-3) << rule;
}

TEST(Optimizer, AdamWMatchesTorchOptim) {
  expect_same_updates_as_torch("adamw");
}

TEST(Optimizer, SgdWithMomentumMatchesTorchOptim) {
  expect_same_updates_as_torch("sgd");
}

TEST(Optimizer, ParametersAndGradientsAreViewsOfTheFlatBuffers) {
  auto [model, unused] = twin_models();
  auto optimizer = make_optimizer(model, recipe("adamw"));
  int64_t total = 0;
  for (const auto& p : model->parameters())
    total += p.numel();
  EXPECT_EQ(optimizer->gradients().numel(), total);
  backward_on(model, 1);
  double sum_of_squares = 0;
  for (const auto& p : model->parameters())
    sum_of_squares += p.grad().pow(2).sum().item<double>();
  EXPECT_NEAR(optimizer->gradients().pow(2).sum().item<double>(), sum_of_squares,
              1e-6 * sum_of_squares);  // fp32 sums in another order
  EXPECT_GT(sum_of_squares, 0.0);
  optimizer->zero_grad();
  for (const auto& p : model->parameters())
    EXPECT_EQ(p.grad().abs().sum().item<double>(), 0.0);
}

TEST(Optimizer, ClipScalesTheGlobalNormLikeTorch) {
  auto [ours, theirs] = twin_models();
  auto optimizer = make_optimizer(ours, recipe("adamw"));
  backward_on(ours, 2);
  backward_on(theirs, 2);
  const double expected = torch::nn::utils::clip_grad_norm_(theirs->parameters(), 0.05);
  EXPECT_NEAR(optimizer->clip_gradient_norm(0.05).item<double>(), expected, 1e-6 * expected);
  EXPECT_GT(expected, 0.05);
  EXPECT_NEAR(optimizer->gradients().norm().item<double>(), 0.05, 1e-6);
  const auto reference = theirs->named_parameters();
  for (const auto& p : ours->named_parameters())
    EXPECT_TRUE(torch::allclose(p.value().grad(), reference[p.key()].grad(), 1e-5, 1e-8))
        << p.key();
}

// Saving after two steps and loading into a fresh optimizer must continue
// exactly as the original does.
TEST(Optimizer, StateRoundTripsByName) {
  for (const std::string rule : {"adamw", "sgd"}) {
    auto [a, b] = twin_models();
    const TrainConfig t = recipe(rule);
    auto original = make_optimizer(a, t);
    for (int step = 0; step < 2; ++step) {
      original->zero_grad();
      backward_on(a, step);
      original->step(1e-2);
    }
    std::stringstream bytes = saved_state(*original);
    copy_weights(a, b);
    auto restored = make_optimizer(b, t);
    torch::serialize::InputArchive archive;
    archive.load_from(bytes);
    restored->load(archive, "state");
    EXPECT_EQ(restored->steps(), 2);
    for (auto* o : {original.get(), restored.get()})
      o->zero_grad();
    backward_on(a, 7);
    backward_on(b, 7);
    original->step(1e-2);
    restored->step(1e-2);
    EXPECT_EQ(max_difference(a, b), 0.0) << rule;
  }
}

// Checkpoints written before the flat optimizer hold torch::optim's state.
TEST(Optimizer, ReadsTheStateOfTorchOptim) {
  for (const std::string rule : {"adamw", "sgd"}) {
    auto [ours, theirs] = twin_models();
    const TrainConfig t = recipe(rule);
    auto reference = torch_optimizer(theirs, t);
    set_torch_lr(*reference, 1e-2);
    for (int step = 0; step < 2; ++step) {
      reference->zero_grad();
      backward_on(theirs, step);
      reference->step();
    }
    std::stringstream bytes = saved_state(*reference);
    copy_weights(theirs, ours);
    auto flat = make_optimizer(ours, t);
    torch::serialize::InputArchive archive;
    archive.load_from(bytes);
    flat->load(archive, "old.pt");
    EXPECT_EQ(flat->steps(), rule == "adamw" ? 2 : 1);  // SGD keeps no count
    flat->zero_grad();
    reference->zero_grad();
    backward_on(ours, 7);
    backward_on(theirs, 7);
    flat->step(1e-2);
    reference->step();
    EXPECT_LT(max_difference(ours, theirs), 1e-6) << rule;
  }
}

// A step flagged to be skipped (fp16's overflow, a non-finite gradient)
// leaves the weights, the moments and the step count as they were.
TEST(Optimizer, ASkippedStepChangesNothing) {
  for (const std::string rule : {"adamw", "sgd"}) {
    auto [a, b] = twin_models();
    const TrainConfig t = recipe(rule);
    auto skipping = make_optimizer(a, t);
    auto plain = make_optimizer(b, t);
    backward_on(a, 1);
    skipping->set_learning_rate(1e-2);
    skipping->step(torch::ones({1}));
    EXPECT_EQ(max_difference(a, b), 0.0) << rule;
    EXPECT_EQ(skipping->steps(), 0) << rule;
    // The next step is the first for both.
    skipping->zero_grad();
    backward_on(a, 2);
    backward_on(b, 2);
    skipping->step(torch::zeros({1}));
    plain->step(1e-2);
    EXPECT_EQ(skipping->steps(), 1) << rule;
    EXPECT_EQ(max_difference(a, b), 0.0) << rule;
  }
}

TEST(Optimizer, StateOfAnotherRuleIsRefused) {
  auto [a, b] = twin_models();
  auto adamw = make_optimizer(a, recipe("adamw"));
  std::stringstream bytes = saved_state(*adamw);
  auto sgd = make_optimizer(b, recipe("sgd"));
  torch::serialize::InputArchive archive;
  archive.load_from(bytes);
  EXPECT_EQ(testing::error_of([&] { sgd->load(archive, "last.pt"); }),
            "last.pt: the optimizer state is adamw's, but train.optimizer is sgd");
}

TEST(Optimizer, AParameterReplacedAfterFlatteningIsAnError) {
  auto [model, unused] = twin_models();
  auto optimizer = make_optimizer(model, recipe("adamw"));
  model->head->bias.set_data(torch::zeros({4}));
  EXPECT_EQ(testing::error_of([&] { optimizer->step(1e-3); }),
            "parameter head.bias was replaced after the optimizer was built; change parameters "
            "in place");
}

TEST(Optimizer, NothingToTrainIsAnError) {
  auto [model, unused] = twin_models();
  for (auto& p : model->parameters())
    p.set_requires_grad(false);
  EXPECT_EQ(testing::error_of([&] { make_optimizer(model, recipe("adamw")); }),
            "the optimizer has no trainable parameters (all are frozen)");
}

}  // namespace
}  // namespace vit
