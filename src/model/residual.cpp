// Shape key: B batch, N tokens, D width, K the width a branch's last layer reads.
//
// A branch's last linear layer stays unapplied (Branch), and the add that takes it
// is evaluated when the stream is first read: by norm(stream), in one pass with the
// add where kernels/residual_norm runs, or by tensor(), with the layer's bias folded
// into the add where kernels/residual_add runs. So the last add of a block and the
// next block's norm1 go in one pass, and no norm is handed between blocks.
#include "vit/model/residual.hpp"

#include "kernel_calls.hpp"
#include "vit/error.hpp"
#include "vit/kernels/gpu_residual_norm.hpp"
#include "vit/kernels/layer_norm.hpp"
#include "vit/kernels/linear.hpp"
#include "vit/kernels/residual_add.hpp"
#include "vit/kernels/residual_norm.hpp"
#include "vit/model/weight_substitution.hpp"

namespace vit {

namespace {

bool dropping(const torch::nn::Dropout& drop) {
  return drop->is_training() && drop->options.p() > 0;
}

// x + drop(layer(input)). Where kernels/residual_add's kernel runs, the layer's
// product leaves out the bias, which the kernel adds with x in one pass, in
// fp32 (so from the fp32 parameter, not a low-precision substitute). Dropout
// between the two (training with p > 0) keeps the separate steps.
torch::Tensor add(const torch::Tensor& x, const Branch& branch) {
  const auto& bias = branch.layer->bias;
  if (dropping(branch.drop) || !biased_residual_uses_own_kernel(x, bias))
    return x + branch.applied();
  return add_biased_residual(x, vit::linear(branch.input, compute_weight(branch.layer->weight)),
                             bias);
}

// add(x, branch) and norm(it) as the next linear layer reads it: one pass
// over the sum where kernels/residual_norm runs.
std::pair<torch::Tensor, torch::Tensor> add_then_norm(const torch::Tensor& x, const Branch& branch,
                                                      const torch::nn::LayerNorm& norm) {
  const auto weight = compute_weight(norm->weight), norm_bias = compute_weight(norm->bias);
  if (gpu_residual_norm_applies(x, weight, norm_bias)) {  // on GPUs, 16-bit end to end
    auto r = gpu_residual_then_norm(x, branch.applied(), weight, norm_bias, norm->options.eps());
    return {r.sum, r.normalized};
  }
  const auto& bias = branch.layer->bias;
  const bool to_bf16 = normalizes_to_bf16_for_linear(x);
  if (dropping(branch.drop) ||
      !biased_residual_then_norm_uses_own_kernel(x, bias, norm->weight, norm->bias, to_bf16)) {
    auto sum = add(x, branch);
    return {sum, normalized_for_linear(norm, sum)};
  }
  auto r = add_biased_residual_then_norm(
      x, vit::linear(branch.input, compute_weight(branch.layer->weight)), bias, norm->weight,
      norm->bias, norm->options.eps(), to_bf16);
  return {r.sum, r.normalized};
}

}  // namespace

torch::Tensor Branch::applied() const {
  return drop.ptr()->forward(linear(layer, input));  // (B, N, D)
}

Residual::Residual(torch::Tensor x) : x_(std::move(x)) {}

const torch::Tensor& Residual::tensor() {
  if (!x_.defined()) throw Error("residual stream: read before it was set");
  if (pending_) {
    x_ = add(x_, *pending_);
    pending_.reset();
  }
  return x_;
}

torch::Tensor Residual::normalized(const torch::nn::LayerNorm& norm) {
  if (!x_.defined()) throw Error("residual stream: read before it was set");
  if (normalized_.defined() && normalized_by_ == norm.get()) return normalized_;
  if (pending_) {
    std::tie(x_, normalized_) = add_then_norm(x_, *pending_, norm);
    pending_.reset();
  } else {
    normalized_ = normalized_for_linear(norm, x_);
  }
  normalized_by_ = norm.get();
  return normalized_;
}

Residual Residual::class_token() {
  return Residual(tensor().narrow(/*dim=*/1, /*start=*/0, /*length=*/1));  // (B, 1, D)
}

Residual Residual::operator+(const Branch& branch) {
  Residual sum(tensor());
  sum.pending_ = branch;
  return sum;
}

Residual Residual::operator+(const torch::Tensor& branch) {
  return Residual(tensor() + branch);
}

}  // namespace vit
