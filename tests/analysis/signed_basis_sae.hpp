#pragma once
// A sparse autoencoder whose features are +e_i and -e_i for each axis, for
// the SAE tests: with k = width, TopK keeps each axis's positive side, so
// z_i = relu(x_i), z_{D+i} = relu(-x_i), and any x is reconstructed exactly.
#include <cstdint>

#include <torch/torch.h>

#include "vit/analysis/sparse_autoencoder.hpp"

namespace vit::testing {

inline SparseAutoencoder signed_basis(int64_t width) {
  SparseAutoencoder sae;
  sae.k = width;
  const auto eye = torch::eye(width);
  sae.W_dec = torch::cat({eye, -eye});  // (2D, D)
  sae.W_enc = sae.W_dec.t().contiguous();
  sae.b_enc = torch::zeros({2 * width});
  sae.b_dec = torch::zeros({width});
  return sae;
}

}  // namespace vit::testing
