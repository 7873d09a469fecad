#pragma once
// A sparse autoencoder on disk: sae.safetensors holds W_enc (D, F), b_enc (F),
// W_dec (F, D) and b_dec (D) in F32, and in its metadata the format
// ("vit-sae"), the layer it was trained on, its k (0: ReLU), its L1 penalty and
// the model width D.
#include <cstdint>
#include <string>

#include "vit/analysis/sparse_autoencoder.hpp"

namespace vit {

struct SaeFile {
  SparseAutoencoder sae;
  int64_t layer = 0;  // 0: the embeddings, l: after block l
  double l1 = 0.0;    // the penalty it was trained with (a ReLU SAE's)
};

// Writes atomically; the tensors are copied to the CPU in F32.
void save_sae(const std::string& path, const SaeFile& file);

// Reads and checks a file save_sae wrote: the four tensors with consistent
// shapes, 0 <= k <= F, a layer >= 0. Throws vit::Error naming `path`.
SaeFile load_sae(const std::string& path);

// Throws vit::Error unless the SAE fits `model`: its width is the model's dim
// and its layer one of the model's 0..depth. `path` names the file.
void check_sae_fits(const SaeFile& file, const ModelConfig& model, const std::string& path);

}  // namespace vit
