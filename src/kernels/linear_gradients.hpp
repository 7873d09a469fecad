#pragma once
// A linear layer's input and weight gradients from its output's, for the
// autograd functions that compute the bias's gradient their own way
// (kernels/product_reductions). Private to kernels/.
#include <torch/types.h>

namespace vit {

// t's rows as a matrix: (M, D) for t of (..., D).
inline torch::Tensor matrix_of_rows(const torch::Tensor& t) {
  return t.reshape({-1, t.size(-1)});
}

// The gradient buffer that autograd would add `parameter`'s gradient to: a
// leaf's .grad() set beforehand (train/weight_mirror sets each to its slice
// of one flat vector) of the gradient's shape and dtype; else undefined.
torch::Tensor preset_gradient(const torch::Tensor& parameter, const torch::Tensor& gradient_like);

struct LinearGradients {
  torch::Tensor dx, dweight;  // undefined where not wanted, or added into a buffer
};

// For y = x W^T (+ b) and dy_rows = y's gradient as (M, out): dx = dy W in
// x's shape, and dW = dy^T x. Where the weight's gradient has a buffer
// already, the product adds to it in place (cuBLAS's beta = 1, the same sum
// at no cost) and dweight stays undefined, so that autograd adds nothing
// there in a pass of its own.
LinearGradients linear_input_and_weight_gradients(const torch::Tensor& dy_rows,
                                                  const torch::Tensor& x,
                                                  const torch::Tensor& weight, bool want_dx,
                                                  bool want_dweight);

// The bias's gradient from its sum over the rows (out): added into the
// bias's buffer where it has one (and undefined returned), else the sum in
// the bias's dtype.
torch::Tensor bias_gradient_from_sum(const torch::Tensor& bias, const torch::Tensor& sum);

}  // namespace vit
