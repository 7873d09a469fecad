#pragma once
// Private to kernels/: a linear layer's input and weight gradients from its output's,
// for autograd functions that compute the bias's gradient their own way.
#include <torch/types.h>

namespace vit {

// t's rows as a matrix: (M, D) for t of (..., D).
inline torch::Tensor matrix_of_rows(const torch::Tensor& t) {
  return t.reshape({-1, t.size(-1)});
}

// A leaf's .grad() set beforehand (as train/weight_mirror does), of the gradient's
// shape and dtype, that autograd would add to; else undefined.
torch::Tensor preset_gradient(const torch::Tensor& parameter, const torch::Tensor& gradient_like);

struct LinearGradients {
  torch::Tensor dx, dweight;  // undefined where not wanted, or added into a buffer
};

// For y = x W^T (+ b) and dy_rows = y's gradient as (M, out): dx = dy W in x's
// shape, and dW = dy^T x, added in place into a preset buffer (then dweight stays
// undefined).
LinearGradients linear_input_and_weight_gradients(const torch::Tensor& dy_rows,
                                                  const torch::Tensor& x,
                                                  const torch::Tensor& weight, bool want_dx,
                                                  bool want_dweight);

// From its sum over the rows (out): added into the bias's preset buffer (undefined
// returned), else the sum in the bias's dtype.
torch::Tensor bias_gradient_from_sum(const torch::Tensor& bias, const torch::Tensor& sum);

}  // namespace vit
