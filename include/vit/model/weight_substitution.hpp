#pragma once
// Which tensors the model's matrix products read as their weights and biases.
//
// By default each Linear and the patch convolution read their own fp32
// parameters (autocast casts them to bf16 or fp16 where it is on). Inside a
// WeightSubstitution scope they read the tensors the scope maps them to
// instead: train/weight_mirror hands over low-precision copies made once per
// step, so that autocast has nothing left to cast. The scope is per thread,
// like autocast's own state, and scopes do not nest.
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

// The map of the WeightSubstitution scope open on this thread, or nullptr
// (activation checkpointing reopens it for its recompute).
const WeightMap* active_weight_substitutes();

// The tensor a matrix product reads for `parameter`: its substitute inside a
// WeightSubstitution scope that maps it, otherwise `parameter` itself (also
// when it is undefined, as a Linear without bias has it).
const at::Tensor& compute_weight(const at::Tensor& parameter);

}  // namespace vit
