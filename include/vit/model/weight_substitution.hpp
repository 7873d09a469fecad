#pragma once
// Which tensors the model's matrix products read as their weights and biases: their
// own parameters, or inside a WeightSubstitution scope the tensors it maps them to
// (train/weight_mirror's low-precision copies). The scope is per thread, like
// autocast's state, and scopes do not nest.
#include <unordered_map>

#include <ATen/core/Tensor.h>

namespace vit {

using WeightMap = std::unordered_map<const c10::TensorImpl*, at::Tensor>;

class WeightSubstitution {
 public:
  // `substitutes` maps a parameter's TensorImpl to the tensor read in its
  // place; it must outlive the scope.
  explicit WeightSubstitution(const WeightMap& substitutes);
  ~WeightSubstitution();
  WeightSubstitution(const WeightSubstitution&) = delete;
  WeightSubstitution& operator=(const WeightSubstitution&) = delete;
};

// The map of the scope open on this thread, or nullptr (activation checkpointing
// reopens it for its recompute).
const WeightMap* active_weight_substitutes();

// `parameter`'s substitute inside a scope that maps it, otherwise `parameter` itself
// (also when it is undefined).
const at::Tensor& compute_weight(const at::Tensor& parameter);

}  // namespace vit
